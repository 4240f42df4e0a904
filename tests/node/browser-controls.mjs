// Scenario: a reviewer opens an Action with a mutating callback control,
// presses it (the in-page dialog confirms first) and sees the request
// pending; the Source reports `succeeded` with a message and the page shows
// it without a reload. The reviewer then asks for more context, sees the
// question listed, and sees it answered live when the Source changes the
// request.
import { BASE, api, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");

run(async (browser) => {
  const page = await newPage(browser);
  await signIn(page, LINK);
  const action = await createAction(SOURCE_KEY, {
    title: "Checkout errors above 2 %",
    options: [
      { id: "rollback", label: "Roll back", style: "primary" },
      { id: "wait", label: "Wait" },
    ],
    callback_url: "https://hooks.example.com/hds",
    context_request_mode: "poll",
    controls: [
      { key: "restart", label: "Restart workers", kind: "callback", mutating: true, confirm: "Restart all checkout workers?" },
      { key: "dashboard", label: "Grafana", kind: "link", url: "https://grafana.example.com/d/checkout" },
    ],
  });
  await page.goto(`${BASE}/app/actions/${action.id}`);
  const link = page.locator("#control-dashboard");
  const linkAttrs = {
    href: await link.getAttribute("href"),
    target: await link.getAttribute("target"),
    rel: await link.getAttribute("rel"),
  };

  // Press: the dialog asks first.
  await page.locator("#control-restart").click();
  const dialog = page.locator("#confirm-dialog");
  await dialog.waitFor({ state: "visible" });
  const dialogText = (await page.locator("#confirm-dialog-text").innerText()).trim();
  const dialogTitle = (await page.locator("#confirm-dialog-title").innerText()).trim();
  await Promise.all([
    page.waitForURL(`${BASE}/app/actions/${action.id}?done=control`),
    page.locator("#confirm-dialog-yes").click(),
  ]);
  const item = page.locator("#control-requests li").first();
  await item.waitFor();
  const requestId = await item.getAttribute("id");
  const pending = await item.getAttribute("data-status");

  // From here on, a reload would lose this marker.
  await page.evaluate(() => { window.__noReload = true; });
  const result = await api("POST", `/v1/source/control-requests/${requestId}/result`, SOURCE_KEY, {
    status: "succeeded",
    message: "12 workers restarted in 8 s",
  });
  if (result.status !== 200) throw new Error(`result: ${result.status} ${JSON.stringify(result.body)}`);
  await page.locator(`#control-requests li[id="${requestId}"][data-status="succeeded"]`).waitFor();
  const shown = {
    status: (await page.locator(`#control-requests li[id="${requestId}"] .badge`).textContent()).trim(),
    message: (await page.locator(`#control-requests li[id="${requestId}"] .control-message`).innerText()).trim(),
    no_reload: await page.evaluate(() => window.__noReload === true),
  };

  // Ask for more context.
  await page.locator("#context-question").fill("Which release introduced the errors?");
  await Promise.all([
    page.waitForURL(`${BASE}/app/actions/${action.id}?done=asked`),
    page.getByRole("button", { name: "Ask the Source" }).click(),
  ]);
  const question = page.locator("#context-requests li").first();
  await question.waitFor();
  const asked = {
    text: (await question.locator(".ev-what").innerText()).trim(),
    status: await question.getAttribute("data-status"),
  };
  await page.evaluate(() => { window.__noReload = true; });
  const patched = await api("PATCH", `/v1/actions/${action.id}`, SOURCE_KEY, {
    description: "Errors started with release 2024.11.3.",
  });
  if (patched.status !== 200) throw new Error(`patch: ${patched.status}`);
  await page.locator('#context-requests li[data-status="answered"]').waitFor();
  const answered = {
    detail: (await page.locator("#context-requests li .ev-detail").first().innerText()).trim(),
    no_reload: await page.evaluate(() => window.__noReload === true),
  };
  const source_view = await api("GET", `/v1/source/actions/${action.id}`, SOURCE_KEY);

  return {
    link: linkAttrs,
    dialog_text: dialogText,
    dialog_title: dialogTitle,
    pending,
    shown,
    asked,
    answered,
    source_status: source_view.body.data.status,
    source_context: source_view.body.data.context_requests,
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
