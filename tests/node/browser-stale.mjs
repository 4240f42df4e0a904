// Scenario: the reviewer has the Action open; the Source changes its
// description; the reviewer's decision is refused, the page says what changed
// (old → new) and shows the new content; deciding again succeeds.
import { BASE, api, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");

run(async (browser) => {
  const page = await newPage(browser);
  await signIn(page, LINK);
  const action = await createAction(SOURCE_KEY, {
    title: "Scale checkout to 12 replicas",
    description: "Scale to **12** replicas for the sale.",
    options: [
      { id: "approve", label: "Approve", style: "primary" },
      { id: "reject", label: "Reject" },
    ],
  });
  await page.goto(`${BASE}/app/actions/${action.id}`);
  const before = (await page.locator("#description").innerText()).trim();

  // The Source changes the request while the page is open.
  const patched = await api("PATCH", `/v1/actions/${action.id}`, SOURCE_KEY, {
    description: "Scale to **40** replicas for the sale.",
  });
  if (patched.status !== 200) throw new Error(`patch: ${patched.status}`);

  const [refusal] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/app/actions/${action.id}/decide`)),
    page.getByRole("button", { name: "Approve" }).click(),
  ]);
  await page.locator("#stale").waitFor();
  const stale = {
    status: refusal.status(),
    heading: (await page.locator("#stale-title").innerText()).trim(),
    field: (await page.locator("#stale .field-name").first().innerText()).trim(),
    old: (await page.locator("#stale .old").first().innerText()).trim(),
    new: (await page.locator("#stale .new").first().innerText()).trim(),
    description: (await page.locator("#description").innerText()).trim(),
    version: (await page.locator("#action-version").innerText()).trim(),
    form_version: await page.locator('#decide-form input[name="action_version"]').inputValue(),
    reason_kept: await page.getByLabel(/Reason/).inputValue(),
  };
  const still = await api("GET", `/v1/source/actions/${action.id}`, SOURCE_KEY);

  // Deciding again, now bound to version 2, succeeds.
  await page.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL(`${BASE}/app/actions/${action.id}?done=decided`);
  const after = await api("GET", `/v1/source/actions/${action.id}`, SOURCE_KEY);

  return {
    description_before: before,
    stale,
    status_after_refusal: still.body.data.status,
    final: {
      status: after.body.data.status,
      option: after.body.data.resolution_option_id,
      receipt_version: after.body.data.receipt.payload.action_version,
    },
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
