// Scenario: a run's page is open; the Source reports progress over HTTP and
// the page's <progress> bar, counts and message move without a reload; the
// run finishing shows its status and takes the cancel form away. The list
// shows the run with its bar.
import { BASE, api, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");

async function report(id, body) {
  const r = await api("PATCH", `/v1/source/runs/${id}/progress`, SOURCE_KEY, body);
  if (r.status !== 200) throw new Error(`progress: ${r.status} ${JSON.stringify(r.body)}`);
}

async function bar(page) {
  return {
    value: await page.locator("#run-progress").getAttribute("value"),
    max: await page.locator("#run-progress").getAttribute("max"),
    counts: (await page.locator("#run-counts").textContent()).trim(),
  };
}

run(async (browser) => {
  const created = await api("POST", "/v1/runs", SOURCE_KEY, { name: "Nightly import", total: 10, status: "running", metadata: { pipeline: "nightly" } });
  if (created.status !== 201) throw new Error(`create: ${created.status}`);
  const id = created.body.data.id;
  await report(id, { completed: 2 });

  const page = await newPage(browser);
  await signIn(page, LINK);
  await page.goto(`${BASE}/app/runs`);
  const listed = {
    rows: await page.locator("li.run-row").count(),
    value: await page.locator(`#run-${id} progress`).getAttribute("value"),
  };
  await page.locator(`#run-${id} a`).click();
  await page.waitForURL(`${BASE}/app/runs/${id}`);
  const start = await bar(page);
  const label = await page.locator("#run-progress").getAttribute("aria-label");
  const cancelWhileRunning = await page.locator("#run-cancel").count();

  await page.evaluate(() => (window.__sameDocument = true));
  // The metadata fold, opened, stays open when the live part is swapped.
  await page.locator("#run-metadata-summary").click();
  await report(id, { completed: 7, message: "rows 601-700" });
  await page.waitForFunction(() => document.getElementById("run-progress")?.getAttribute("value") === "7", null, { timeout: 10000 });
  const moved = await bar(page);
  const metadataOpen = await page.locator("#run-metadata").evaluate((d) => d.open);
  const message = (await page.locator("#run-message").textContent()).trim();

  const done = await api("POST", `/v1/source/runs/${id}/complete`, SOURCE_KEY, { status: "failed", error: "disk full" });
  if (done.status !== 200) throw new Error(`complete: ${done.status}`);
  await page.waitForFunction(() => document.getElementById("run-status")?.textContent.trim() === "failed", null, { timeout: 10000 });
  const error = (await page.locator("#run-error").textContent()).trim();
  const sameDocument = await page.evaluate(() => window.__sameDocument === true);
  // A finished run offers no cancel form any more (it would answer 409).
  const cancelAfterFinish = await page.locator("#run-cancel").count();

  return {
    metadata_open: metadataOpen,
    listed,
    start,
    label,
    moved,
    message,
    error,
    cancel_forms: [cancelWhileRunning, cancelAfterFinish],
    same_document: sameDocument,
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
