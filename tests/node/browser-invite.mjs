// Scenario: the admin invites a new address on the Invitations page (the link
// shown once, with a copy button, after the form's redirect; a reload shows
// a notice instead); in a fresh browser, signed out, the
// invited person opens the link, signs in by the link itself (no identity
// provider is configured) and lands in the inbox of the workspace, where the
// Source's request is waiting. They open it, claim it, comment in Markdown
// and approve it; the Rust side reads the result back through the API.
import { BASE, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");
const EMAIL = requireEnv("INVITEE");
// Markdown with bold text and raw HTML that must reach the page as text.
const COMMENT = 'Rotated in **staging** first. <img src=x onerror="window.__pwned=true"> <script>window.__pwned=true</script>';

run(async (browser) => {
  const action = await createAction(SOURCE_KEY, {
    title: "Rotate the payroll database password",
    options: [{ id: "approve", label: "Approve", style: "primary" }, { id: "reject", label: "Reject" }],
  });

  // The admin invites on the dashboard.
  const admin = await newPage(browser);
  await signIn(admin, LINK);
  await admin.getByRole("link", { name: "Invitations" }).click();
  await admin.waitForURL(`${BASE}/app/invitations`);
  await admin.getByLabel("E-mail").fill(EMAIL);
  await admin.getByLabel("Role").selectOption("reviewer");
  await admin.getByRole("button", { name: "Create invitation" }).click();
  // The form's POST redirects to the page that shows the link once.
  await admin.waitForURL(`${BASE}/app/invitations?done=created`);
  const link = (await admin.locator("#invitation-link").innerText()).trim();
  const copyShown = await admin.getByRole("button", { name: "Copy link" }).isVisible();
  // A reload shows a notice, not the link, and invites no one again.
  await admin.reload();
  const reloaded = {
    links: await admin.locator("#invitation-link").count(),
    notice: await admin.locator("#shown-once").isVisible(),
    rows: await admin.locator("table.list tbody tr").count(),
  };

  // A fresh browser, signed out: the link's page, then its one button.
  const invitee = await newPage(browser);
  await invitee.goto(link);
  const offered = {
    workspace: (await invitee.locator("#invitation-workspace").innerText()).trim(),
    role: (await invitee.locator("#invitation-role").innerText()).trim(),
  };
  await invitee.getByRole("button", { name: "Sign in and join" }).click();
  await invitee.waitForURL(`${BASE}/app`);
  await invitee.locator(`li[data-id="${action.id}"]`).waitFor();
  const who = (await invitee.locator(".who").innerText()).trim();

  // The invitee opens the request, claims it, comments and decides.
  await invitee.locator(`li[data-id="${action.id}"] a.row-link`).click();
  await invitee.waitForURL(`${BASE}/app/actions/${action.id}`);
  const assigneeBefore = (await invitee.locator("#assignee").innerText()).trim();
  await invitee.getByRole("button", { name: "Claim it" }).click();
  await invitee.waitForURL(`${BASE}/app/actions/${action.id}?done=claimed`);
  const assigneeAfter = (await invitee.locator("#assignee").innerText()).trim();
  const claimOffered = await invitee.locator("#claim-form").count();
  await invitee.getByLabel(/Add a comment/).fill(COMMENT);
  await invitee.getByRole("button", { name: "Comment" }).click();
  await invitee.waitForURL(`${BASE}/app/actions/${action.id}?done=commented`);
  const thread = invitee.locator("#comment-thread > li");
  const comment = {
    count: await thread.count(),
    author: (await thread.first().locator(".ev-what").innerText()).trim(),
    html: (await thread.first().locator(".prose").innerHTML()).trim(),
    text: (await thread.first().locator(".prose").innerText()).trim(),
    // Whatever the raw HTML tried, no element of its own reached the page.
    injected: await invitee.locator("#comment-thread img, #comment-thread script, #comment-thread [onerror]").count(),
    pwned: await invitee.evaluate(() => window.__pwned === true),
  };
  const version = (await invitee.locator("#action-version").innerText()).trim();
  const fingerprint = (await invitee.locator("#fingerprint").innerText()).trim();
  await invitee.getByLabel(/Reason/).fill("Checked with the DBA");
  await invitee.getByRole("button", { name: "Approve" }).click();
  await invitee.waitForURL(`${BASE}/app/actions/${action.id}?done=decided`);
  const decided = {
    status: (await invitee.locator("#action-status").textContent()).trim(),
    verified: await invitee.locator("#receipt-verified").isVisible(),
    by: (await invitee.locator("#resolution").textContent()).replace(/\s+/g, " ").trim(),
    comment_form: await invitee.locator("#comment-form").count(),
  };

  // The link is used: opening it again says so.
  const again = await invitee.goto(link);

  // The admin's list shows the invitation accepted.
  await admin.goto(`${BASE}/app/invitations`);
  const status = (await admin.locator("table.list tbody tr").first().locator(".badge").textContent()).trim();

  return {
    link_prefix: link.slice(0, `${BASE}/app/invitations/`.length),
    copy_button: copyShown,
    reloaded,
    offered,
    signed_in_as: who,
    again_status: again.status(),
    admin_status: status,
    action_id: action.id,
    fingerprint: action.fingerprint,
    assignee_before: assigneeBefore,
    assignee_after: assigneeAfter,
    claim_offered_after: claimOffered,
    comment,
    shown_version: version,
    shown_fingerprint: fingerprint,
    decided,
    csp_violations: [...admin.violations, ...invitee.violations],
    script_errors: [...admin.errors, ...invitee.errors],
  };
});
