// Scenario: the admin invites a new address on the Invitations page (the link
// shown once, with a copy button); in a fresh browser, signed out, the
// invited person opens the link, signs in by the link itself (no identity
// provider is configured) and lands in the inbox of the workspace, where the
// Source's request is waiting.
import { BASE, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");
const SOURCE_KEY = requireEnv("SOURCE_KEY");
const EMAIL = requireEnv("INVITEE");

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
  const link = (await admin.locator("#invitation-link").innerText()).trim();
  const copyShown = await admin.getByRole("button", { name: "Copy link" }).isVisible();

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

  // The link is used: opening it again says so.
  const again = await invitee.goto(link);

  // The admin's list shows the invitation accepted.
  await admin.goto(`${BASE}/app/invitations`);
  const status = (await admin.locator("table.list tbody tr").first().locator(".badge").textContent()).trim();

  return {
    link_prefix: link.slice(0, `${BASE}/app/invitations/`.length),
    copy_button: copyShown,
    offered,
    signed_in_as: who,
    again_status: again.status(),
    admin_status: status,
    csp_violations: [...admin.violations, ...invitee.violations],
    script_errors: [...admin.errors, ...invitee.errors],
  };
});
