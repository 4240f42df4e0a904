// Scenario: the header's bell. Signed in with N unread notifications, the
// bell shows N; a Source creates an Action over HTTP while the inbox is open
// and the bell becomes N+1 without a reload (the inbox and the bell share one
// EventSource); the same on a page without a live list (Sources); then the
// notifications page's "Mark all read" brings it to 0.
import { BASE, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");

const body = (title) => ({
  title,
  options: [
    { id: "approve", label: "Approve", style: "primary" },
    { id: "reject", label: "Reject", style: "destructive" },
  ],
});

async function bell(page) {
  return {
    count: (await page.locator("#nav-bell-count").textContent()).trim(),
    label: (await page.locator("#nav-bell-label").textContent()).trim(),
    hidden: await page.locator("#nav-bell-count").isHidden(),
  };
}

async function waitForCount(page, n) {
  await page.waitForFunction(
    (n) => document.getElementById("nav-bell-count").textContent.trim() === String(n),
    n,
    { timeout: 10000 },
  );
}

run(async (browser) => {
  const page = await newPage(browser);
  // Count the page's change streams.
  await page.context().addInitScript(() => {
    const Native = window.EventSource;
    window.__streams = 0;
    window.EventSource = function (url, opts) {
      window.__streams++;
      return new Native(url, opts);
    };
  });
  await signIn(page, LINK);
  const start = await bell(page);
  const n = Number(start.count);

  await page.evaluate(() => (window.__sameDocument = true));
  await createAction(SOURCE_KEY, body("Rotate the signing keys"));
  await waitForCount(page, n + 1);
  const inbox = await bell(page);
  const inboxSameDocument = await page.evaluate(() => window.__sameDocument === true);
  const inboxStreams = await page.evaluate(() => window.__streams);

  // A page with no live list: the bell alone listens.
  await page.goto(`${BASE}/app/sources`);
  const onSources = await bell(page);
  await page.evaluate(() => (window.__sameDocument = true));
  await createAction(SOURCE_KEY, body("Drop the staging database"));
  await waitForCount(page, n + 2);
  const sources = await bell(page);
  const sourcesSameDocument = await page.evaluate(() => window.__sameDocument === true);
  const sourcesStreams = await page.evaluate(() => window.__streams);

  // The bell opens the list; Mark all read empties it.
  await page.locator("#nav-bell").click();
  await page.waitForURL(`${BASE}/app/notifications`);
  const listed = await page.locator("li.notif.is-unread").count();
  await page.getByRole("button", { name: "Mark all read" }).click();
  await page.waitForURL(`${BASE}/app/notifications?done=read-all`);
  const after = await bell(page);
  const unreadAfter = await page.locator("li.notif.is-unread").count();

  return {
    start,
    inbox,
    inbox_same_document: inboxSameDocument,
    inbox_streams: inboxStreams,
    on_sources: onSources,
    sources,
    sources_same_document: sourcesSameDocument,
    sources_streams: sourcesStreams,
    listed_unread: listed,
    after,
    unread_after: unreadAfter,
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
