// Scenario: sign in with a one-time link; a Source creates an Action while the
// inbox is open and it appears without a reload; open it with the keyboard;
// decide; the Source's long poll, started before the decision, returns it
// with a receipt.
import { BASE, api, ask, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");

run(async (browser) => {
  const page = await newPage(browser);
  await signIn(page, LINK);
  await page.getByText("All caught up").waitFor();

  // A marker that a reload would wipe.
  await page.evaluate(() => (window.__sameDocument = true));
  const action = await createAction(SOURCE_KEY, {
    title: "Deploy api v2.4.1 to production",
    description: "Rolls out **v2.4.1**. See [the changelog](https://example.com/changes).",
    priority: "high",
    options: [
      { id: "approve", label: "Approve", style: "primary" },
      { id: "reject", label: "Reject", style: "destructive" },
    ],
  });
  const row = page.locator(`li[data-id="${action.id}"]`);
  await row.waitFor();
  const sameDocument = await page.evaluate(() => window.__sameDocument === true);
  const navCount = (await page.locator("#nav-open-count").textContent()).trim();

  // j focuses the first row, Enter opens it.
  await page.keyboard.press("j");
  await page.keyboard.press("Enter");
  await page.waitForURL(`${BASE}/app/actions/${action.id}`);
  const shownFingerprint = (await page.locator("#fingerprint").textContent()).trim();

  // The Source waits for the decision; the Rust side confirms the server holds it.
  const poll = api("GET", `/v1/source/actions/${action.id}?wait_seconds=30`, SOURCE_KEY);
  await ask({ polls_held: 1 });

  await page.getByLabel(/Reason/).fill("Checked the changelog");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL(`${BASE}/app/actions/${action.id}?done=decided`);
  const polled = await poll;

  return {
    action_id: action.id,
    fingerprint: action.fingerprint,
    shown_fingerprint: shownFingerprint,
    appeared_without_reload: sameDocument,
    nav_count: navCount,
    page_status: (await page.locator("#action-status").textContent()).trim(),
    page_verified: await page.locator("#receipt-verified").isVisible(),
    page_kid: (await page.locator("#receipt-kid").textContent()).trim(),
    poll_status: polled.status,
    poll: polled.body.data,
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
