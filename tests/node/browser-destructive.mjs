// Scenario: a destructive option asks to confirm. With JavaScript a dialog
// asks; cancelling decides nothing, confirming decides. Without JavaScript a
// confirmation page does the same.
import { BASE, api, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const SOURCE_KEY = requireEnv("SOURCE_KEY");

const body = (title) => ({
  title,
  options: [
    { id: "approve", label: "Approve", style: "primary" },
    { id: "reject", label: "Delete the branch", style: "destructive" },
  ],
});

async function status(id) {
  return (await api("GET", `/v1/source/actions/${id}`, SOURCE_KEY)).body.data;
}

run(async (browser) => {
  // With JavaScript: the dialog.
  const page = await newPage(browser);
  await signIn(page, requireEnv("LINK"));
  const a = await createAction(SOURCE_KEY, body("Delete the stale release branch"));
  await page.goto(`${BASE}/app/actions/${a.id}`);
  const destructive = page.getByRole("button", { name: "Delete the branch", exact: true });
  await destructive.click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  const dialogText = (await page.locator("#confirm-dialog-text").innerText()).trim();
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await dialog.waitFor({ state: "hidden" });
  const afterCancel = (await status(a.id)).status;
  const urlAfterCancel = page.url();

  await destructive.click();
  await dialog.getByRole("button", { name: /Yes, Delete the branch/ }).click();
  await page.waitForURL(`${BASE}/app/actions/${a.id}?done=decided`);
  const decided = await status(a.id);

  // Without JavaScript: a confirmation page.
  const plain = await newPage(browser, { width: 1280, height: 800 }, { javaScriptEnabled: false });
  await signIn(plain, requireEnv("LINK2"));
  const b = await createAction(SOURCE_KEY, body("Delete the old staging database"));
  await plain.goto(`${BASE}/app/actions/${b.id}`);
  await plain.getByRole("button", { name: "Delete the branch", exact: true }).click();
  const confirmHeading = (await plain.locator("h1").innerText()).trim();
  const confirmText = (await plain.locator("#confirm-message").innerText()).trim();
  const noJsAfterFirstPost = (await status(b.id)).status;
  await plain.getByRole("link", { name: "Go back" }).click();
  await plain.waitForURL(`${BASE}/app/actions/${b.id}`);
  const noJsAfterCancel = (await status(b.id)).status;
  await plain.getByRole("button", { name: "Delete the branch", exact: true }).click();
  await plain.getByRole("button", { name: /Yes, Delete the branch/ }).click();
  await plain.waitForURL(`${BASE}/app/actions/${b.id}?done=decided`);
  const noJsDecided = await status(b.id);

  return {
    js: {
      dialog_text: dialogText,
      after_cancel: afterCancel,
      stayed_on_page: urlAfterCancel === `${BASE}/app/actions/${a.id}`,
      final_status: decided.status,
      final_option: decided.resolution_option_id,
    },
    no_js: {
      confirm_heading: confirmHeading,
      confirm_text: confirmText,
      after_first_post: noJsAfterFirstPost,
      after_cancel: noJsAfterCancel,
      final_status: noJsDecided.status,
      final_option: noJsDecided.resolution_option_id,
    },
    csp_violations: [...page.violations, ...plain.violations],
    script_errors: [...page.errors, ...plain.errors],
  };
});
