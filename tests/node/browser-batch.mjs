// Scenario: batch decisions in the inbox and keyboard decisions on an Action
// page. Three rows are picked; the Source changes one after the page was
// rendered; the batch decides the other two and names the changed one, left
// open. Then an Action page is decided with its keys: `?` lists them, `c`
// goes to the reason box (typing there decides nothing), `a` approves, `2`
// picks the second of three options, and `r` on a destructive reject asks
// first.
import { BASE, api, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const SOURCE_KEY = requireEnv("SOURCE_KEY");

const pair = (title) => ({
  title,
  options: [
    { id: "approve", label: "Approve", style: "primary" },
    { id: "reject", label: "Reject", style: "destructive" },
  ],
});

async function state(id) {
  return (await api("GET", `/v1/source/actions/${id}`, SOURCE_KEY)).body.data;
}

run(async (browser) => {
  const page = await newPage(browser);
  await signIn(page, requireEnv("LINK"));

  // ---- batch ----
  const rows = [];
  for (const t of ["Rotate the TLS cert on edge-1", "Rotate the TLS cert on edge-2", "Rotate the TLS cert on edge-3"]) {
    rows.push(await createAction(SOURCE_KEY, pair(t)));
  }
  await page.goto(`${BASE}/app`);
  for (const a of rows) {
    await page.locator(`li[data-id="${a.id}"] input[name="pick"]`).check();
  }
  const bar = page.locator("#batch-options");
  await bar.getByRole("button", { name: "Approve", exact: true }).waitFor();
  const barText = (await page.locator("#batch-count").innerText()).trim();
  // Picked rows keep the bar in view: scrolled to the top of the page, the
  // bar is still inside the window, at its bottom edge.
  await page.evaluate(() => window.scrollTo(0, 0));
  const barBox = await page.locator("#batch-form").boundingBox();
  const viewport = page.viewportSize();
  const barInView = barBox !== null && barBox.y >= 0 && Math.abs(barBox.y + barBox.height - viewport.height) < 2;
  // Enter in the reason box decides nothing: only an option's button does.
  await page.locator("#batch-reason").fill("still typing my reason");
  await page.locator("#batch-reason").press("Enter");
  await page.waitForTimeout(300);
  const afterEnter = [];
  for (const a of rows) afterEnter.push((await state(a.id)).status);
  await page.locator("#batch-reason").fill("");
  // Changed after the page was rendered: the reviewer did not see this.
  const patched = await api("PATCH", `/v1/actions/${rows[1].id}`, SOURCE_KEY, {
    title: "Rotate the TLS cert on edge-2 and restart it",
  });
  await bar.getByRole("button", { name: "Approve", exact: true }).click();
  await page.waitForURL(/batch=done/);
  const decidedText = (await page.locator("#batch-decided").innerText()).trim();
  const changedIds = await page.locator("#batch-changed li").evaluateAll((els) => els.map((e) => e.getAttribute("data-id")));
  const changedText = (await page.locator("#batch-changed").innerText()).trim();
  const after = [];
  for (const a of rows) after.push((await state(a.id)).status);

  // Same ids and labels, styles differing: one bar, Reject as destructive
  // as its strongest style; a different label: no buttons, and why.
  const plain = await createAction(SOURCE_KEY, {
    title: "Rotate the TLS cert on edge-4",
    options: [{ id: "approve", label: "Approve" }, { id: "reject", label: "Reject" }],
  });
  const styled = await createAction(SOURCE_KEY, pair("Rotate the TLS cert on edge-5"));
  const other = await createAction(SOURCE_KEY, {
    title: "Rotate the TLS cert on edge-6",
    options: [{ id: "approve", label: "Approve now" }, { id: "reject", label: "Reject" }],
  });
  await page.goto(`${BASE}/app`);
  for (const a of [plain, styled]) await page.locator(`li[data-id="${a.id}"] input[name="pick"]`).check();
  await bar.getByRole("button", { name: "Reject", exact: true }).waitFor();
  const mixedStyles = {
    buttons: await bar.locator("button").evaluateAll((els) => els.map((e) => [e.textContent, e.className])),
    note: (await page.locator("#batch-note").innerText()).trim(),
  };
  await page.locator(`li[data-id="${other.id}"] input[name="pick"]`).check();
  await page.locator("#batch-note").getByText("different options").waitFor();
  const mixedLabels = {
    buttons: await bar.locator("button").count(),
    note: (await page.locator("#batch-note").innerText()).trim(),
  };

  // ---- keyboard ----
  const k = await createAction(SOURCE_KEY, pair("Grant read access to the audit bucket"));
  await page.goto(`${BASE}/app/actions/${k.id}`);
  const keysShown = await page.locator("#decide-form button[data-key]").evaluateAll((els) =>
    els.map((e) => [e.getAttribute("data-label"), e.getAttribute("data-key"), e.querySelector("kbd") && e.querySelector("kbd").textContent]),
  );
  await page.keyboard.press("?");
  await page.locator("#keys-help").waitFor();
  const helpText = (await page.locator("#keys-help-list").innerText()).trim();
  await page.keyboard.press("Escape");
  await page.locator("#keys-help").waitFor({ state: "hidden" });
  // c goes to the comment box; keys typed there (an "a" among them) decide nothing.
  await page.keyboard.press("c");
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.getAttribute("name"));
  await page.keyboard.type("a reader, as agreed");
  const whileTyping = (await state(k.id)).status;
  await page.locator("#comment-body").evaluate((el) => el.blur());
  await page.locator('#decide-form textarea[name="reason"]').fill("read only, as agreed");
  await page.locator('#decide-form textarea[name="reason"]').evaluate((el) => el.blur());
  await page.keyboard.press("a");
  await page.waitForURL(`${BASE}/app/actions/${k.id}?done=decided`);
  const byKey = await state(k.id);

  const three = await createAction(SOURCE_KEY, {
    title: "What to do with build 812",
    options: [
      { id: "ship", label: "Ship it" },
      { id: "hold", label: "Hold" },
      { id: "drop", label: "Drop it", style: "destructive" },
    ],
  });
  await page.goto(`${BASE}/app/actions/${three.id}`);
  await page.keyboard.press("2");
  await page.waitForURL(`${BASE}/app/actions/${three.id}?done=decided`);
  const byNumber = await state(three.id);

  const d = await createAction(SOURCE_KEY, pair("Delete the old staging database"));
  await page.goto(`${BASE}/app/actions/${d.id}`);
  await page.keyboard.press("r");
  const dialog = page.locator("#confirm-dialog");
  await dialog.waitFor();
  const confirmText = (await page.locator("#confirm-dialog-text").innerText()).trim();
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await dialog.waitFor({ state: "hidden" });
  const destructiveAfterCancel = (await state(d.id)).status;

  return {
    batch: {
      bar: barText,
      bar_in_view: barInView,
      patched: patched.status,
      decided_text: decidedText,
      changed_ids: changedIds,
      changed_text: changedText,
      statuses: after,
      after_enter: afterEnter,
      ids: rows.map((a) => a.id),
      mixed_styles: mixedStyles,
      mixed_labels: mixedLabels,
    },
    keys: {
      shown: keysShown,
      help: helpText,
      focused,
      while_typing: whileTyping,
      by_key: { status: byKey.status, option: byKey.resolution_option_id, reason: byKey.resolution_reason },
      by_number: { status: byNumber.status, option: byNumber.resolution_option_id },
      confirm_text: confirmText,
      destructive_after_cancel: destructiveAfterCancel,
    },
    csp_violations: page.violations,
    script_errors: page.errors,
  };
});
