// Scenario: single-key shortcuts are safe. A decision key pressed while
// another button has the focus (Claim it) decides nothing; turned off (the
// toggle beside the key hint, remembered in this browser) no key decides;
// turned on again, a key with nothing focused decides. In the inbox, a
// refresh that brings a new row keeps the focus on the control that had it.
import { BASE, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");

const options = [
  { id: "approve", label: "Approve", style: "primary" },
  { id: "reject", label: "Reject", style: "destructive" },
];

run(async (browser) => {
  const page = await newPage(browser);
  await signIn(page, LINK);
  const action = await createAction(SOURCE_KEY, { title: "Rotate the signing key", options });
  await page.goto(`${BASE}/app/actions/${action.id}`);
  const status = async () => (await page.locator("#action-status").textContent()).trim();

  // Focus on another button: the decision key means nothing.
  await page.getByRole("button", { name: "Claim it" }).focus();
  await page.keyboard.press("a");
  await page.keyboard.press("?");
  await page.waitForTimeout(400);
  const onAnotherButton = {
    url: page.url(),
    status: await status(),
    help_open: await page.evaluate(() => !!document.querySelector("dialog[open]")),
  };

  // Turned off: nothing decides, even with nothing focused.
  const toggle = page.locator("#decide-keys [data-keys-toggle]");
  const labelOn = (await toggle.textContent()).trim();
  await toggle.click();
  const labelOff = (await toggle.textContent()).trim();
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.keyboard.press("a");
  await page.waitForTimeout(400);
  const whileOff = { url: page.url(), status: await status() };
  const remembered = await page.evaluate(() => window.localStorage.getItem("hds-keys"));

  // On again: the key decides, also after a click on the page's text
  // (which gives the focus to <main>, nothing in particular).
  await toggle.click();
  await page.locator("h1").click();
  const focusedOnClick = await page.evaluate(() => document.activeElement.tagName);
  await page.keyboard.press("a");
  await page.waitForURL(`${BASE}/app/actions/${action.id}?done=decided`);
  const decided = await status();

  // The inbox: focus on a status tab survives a refresh that adds a row.
  await page.goto(`${BASE}/app`);
  const tab = page.locator('nav.tabs a[href*="status=resolved"]');
  await tab.focus();
  // j on a focused tab means nothing: the focus stays there.
  await page.keyboard.press("j");
  const focusedBefore = await page.evaluate(() => document.activeElement.getAttribute("href"));
  const fresh = await createAction(SOURCE_KEY, { title: "A new request arrives", options });
  await page.locator(`li[data-id="${fresh.id}"]`).waitFor();
  const focusedAfter = await page.evaluate(() => document.activeElement.getAttribute("href"));

  return {
    on_another_button: onAnotherButton,
    label_on: labelOn,
    label_off: labelOff,
    while_off: whileOff,
    remembered,
    decided,
    focused_on_click: focusedOnClick,
    focused_before: focusedBefore,
    focused_after: focusedAfter,
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
