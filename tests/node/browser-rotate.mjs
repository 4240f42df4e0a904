// Scenario: replace only the live key on the Source page, behind its
// confirmation; the new key is shown once (POST-redirect-GET). A reload shows
// a notice instead and rotates nothing: the shown key works, and so does the
// old one, whose end the page shows.
import { BASE, api, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const OLD_KEY = requireEnv("SOURCE_KEY");
const SOURCE_ID = requireEnv("SOURCE_ID");

const action = (title) => ({
  title,
  options: [
    { id: "approve", label: "Approve", style: "primary" },
    { id: "reject", label: "Reject" },
  ],
});

run(async (browser) => {
  const page = await newPage(browser);
  await signIn(page, requireEnv("LINK"));
  const sourceUrl = `${BASE}/app/sources/${SOURCE_ID}`;
  await page.goto(sourceUrl);
  await page.locator("#rotate-environment").selectOption("live");
  const overlapDefault = await page.locator("#rotate-overlap").inputValue();
  await page.locator("#rotate-keys-submit").click();
  const confirmHeading = (await page.locator("#confirm-heading").innerText()).trim();
  await page.locator("#confirm-yes").click();
  await page.waitForURL(`${sourceUrl}?done=rotated`);

  const shownKey = (await page.locator("#secret-live").innerText()).trim();
  const shownTest = await page.locator("#secret-test").count();
  const oldKeyLine = (await page.locator("#key-live-old").innerText()).trim();

  await page.reload();
  const afterReload = {
    url: page.url(),
    secrets: await page.locator("#secrets").count(),
    key_in_page: (await page.content()).includes(shownKey),
    notice: (await page.locator("#shown-once").innerText()).trim(),
    old_key_line: (await page.locator("#key-live-old").innerText()).trim(),
  };

  const withNew = await api("POST", "/v1/actions", shownKey, action("With the shown key"));
  const withOld = await api("POST", "/v1/actions", OLD_KEY, action("With the old key, in its overlap"));
  return {
    overlap_default: overlapDefault,
    confirm_heading: confirmHeading,
    shown_key: shownKey,
    shown_test_keys: shownTest,
    old_key_line: oldKeyLine,
    after_reload: afterReload,
    new_key_status: withNew.status,
    old_key_status: withOld.status,
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
