// Screenshots for the README, taken from a realistic inbox: several Sources,
// priorities, a test-key request, typed interactions, and an Action page with
// Markdown and context blocks; and a Source page with its webhook delivery
// log (the receiver answers the first delivery 410, the next ones 200;
// HOOK_DOWN refuses connections).
import { BASE, api, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const OUT = requireEnv("OUT_DIR");
const USER_TOKEN = requireEnv("USER_TOKEN");
const SOURCE_KEY = requireEnv("SOURCE_KEY");
const TEST_KEY = requireEnv("TEST_KEY");

async function ok(r, what) {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

run(async (browser) => {
  await ok(
    await api("PATCH", `/v1/sources/${requireEnv("SOURCE_ID")}`, USER_TOKEN, { name: "Deploy pipeline" }),
    "rename source",
  );
  const billing = await ok(await api("POST", "/v1/sources", USER_TOKEN, { name: "Billing assistant" }), "source");
  const access = await ok(await api("POST", "/v1/sources", USER_TOKEN, { name: "Access requests" }), "source");

  const deploy = await createAction(SOURCE_KEY, {
    title: "Deploy api v2.4.1 to production",
    priority: "high",
    description: [
      "Rolls out **v2.4.1** of the public API to all three regions, one region at a time.",
      "",
      "- 14 commits since v2.4.0, all green in CI",
      "- Database migration `0042_add_refund_reason` is additive",
      "- Rollback: `deploy rollback api --to v2.4.0` (about 4 minutes)",
      "",
      "[Full changelog](https://example.com/api/releases/v2.4.1)",
    ].join("\n"),
    context: [
      {
        type: "kv",
        items: [
          { key: "Service", value: "api" },
          { key: "Version", value: "v2.4.0 → v2.4.1" },
          { key: "Regions", value: "eu-west-1, us-east-1, ap-south-1" },
          { key: "Requested by", value: "release bot, pipeline #8812" },
        ],
      },
      {
        type: "diff",
        diff: [
          "@@ deploy/api.yaml @@",
          "-  image: registry.example.com/api:v2.4.0",
          "+  image: registry.example.com/api:v2.4.1",
          "   replicas: 6",
        ].join("\n"),
      },
    ],
    open_url: "https://ci.example.com/pipelines/8812",
    callback_url: requireEnv("HOOK_OK"),
    context_request_mode: "poll",
    controls: [
      { key: "canary", label: "Restart the canary", kind: "callback", mutating: true, confirm: "Restart the canary pods in us-east-1?" },
      { key: "dashboards", label: "Grafana", kind: "link", url: "https://grafana.example.com/d/api" },
    ],
    options: [
      { id: "approve", label: "Approve deploy", style: "primary" },
      { id: "hold", label: "Hold until tomorrow" },
      { id: "reject", label: "Reject", style: "destructive" },
    ],
  });
  await createAction(billing.secrets.live_key, {
    title: "Refund order #48213 ($1,240.00) to Northwind Ltd",
    priority: "urgent",
    context: [{ type: "kv", items: [{ key: "Customer", value: "Northwind Ltd" }, { key: "Reason", value: "Double charge" }] }],
    interaction: { type: "boolean" },
  });
  await createAction(access.secrets.live_key, {
    title: "Grant Dana Kim read access to the analytics warehouse",
    interaction: {
      type: "choice",
      choices: [
        { id: "30d", label: "Grant for 30 days" },
        { id: "7d", label: "Grant for 7 days" },
        { id: "no", label: "Do not grant" },
      ],
    },
  });
  await createAction(SOURCE_KEY, {
    title: "How many checkout replicas should run during tonight's sale?",
    interaction: { type: "number", min: 2, max: 60 },
  });
  await createAction(SOURCE_KEY, {
    title: "Rotate the database credentials for eu-west-1",
    priority: "low",
    options: [{ id: "go", label: "Rotate now", style: "primary" }, { id: "later", label: "Next maintenance window" }],
  });
  await createAction(TEST_KEY, {
    title: "Send the weekly digest to 12,480 subscribers",
    options: [{ id: "send", label: "Send", style: "primary" }, { id: "skip", label: "Skip this week" }],
  });

  // Webhooks, one after another so the receiver's scripted 410 goes to the first.
  const SOURCE_ID = requireEnv("SOURCE_ID");
  const hooked = [
    ["Close ticket OPS-1182 as won't fix", requireEnv("HOOK_OK")],
    ["Restart the search cluster in us-east-1", requireEnv("HOOK_OK")],
    ["Pause the nightly export to the data lake", requireEnv("HOOK_DOWN")],
  ];
  for (const [i, [title, url]] of hooked.entries()) {
    const a = await createAction(SOURCE_KEY, { title, callback_url: url, interaction: { type: "boolean" } });
    await ok(await api("POST", `/v1/actions/${a.id}/cancel`, SOURCE_KEY, { reason: "no longer needed" }), "cancel");
    for (let n = 0; ; n++) {
      const log = await ok(await api("GET", `/v1/sources/${SOURCE_ID}/deliveries`, USER_TOKEN), "deliveries");
      if (log.data.filter((d) => d.attempts > 0).length > i) break;
      if (n > 500) throw new Error(`delivery ${i} was not attempted`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  // The deploy's controls and a question, as a reviewer and its Source left them.
  const pressed = await ok(
    await api("POST", `/v1/actions/${deploy.id}/controls/canary/invoke`, USER_TOKEN, {
      action_version: deploy.action_version,
      fingerprint: deploy.fingerprint,
    }),
    "invoke",
  );
  await ok(
    await api("POST", `/v1/source/control-requests/${pressed.data.id}/result`, SOURCE_KEY, {
      status: "succeeded",
      message: "3 canary pods restarted; error rate back to 0.1 %",
    }),
    "result",
  );
  await ok(
    await api("POST", `/v1/actions/${deploy.id}/context-requests`, USER_TOKEN, { question: "Which region goes first, and how long does each take?" }),
    "ask",
  );
  const lastLog = await ok(await api("GET", `/v1/sources/${SOURCE_ID}/deliveries`, USER_TOKEN), "deliveries");
  const failed = lastLog.data.find((d) => d.status === "failed") || lastLog.data[0];

  const wide = await newPage(browser, { width: 1280, height: 800 });
  await signIn(wide, requireEnv("LINK"));
  // Live and test together, so the TEST badge shows.
  await wide.goto(`${BASE}/app?environment=all`);
  await wide.locator("#inbox-rows li").nth(5).waitFor();
  await wide.screenshot({ path: `${OUT}/inbox.png` });
  await wide.goto(`${BASE}/app/actions/${deploy.id}`);
  await wide.screenshot({ path: `${OUT}/action.png` });
  await wide.goto(`${BASE}/app/sources/${SOURCE_ID}`);
  await wide.screenshot({ path: `${OUT}/source.png` });
  await wide.goto(`${BASE}/app/sources/${SOURCE_ID}/deliveries/${failed.id}`);
  await wide.screenshot({ path: `${OUT}/delivery.png` });
  await wide.goto(`${BASE}/app/notifications`);
  await wide.screenshot({ path: `${OUT}/notifications.png` });
  await wide.goto(`${BASE}/app/settings/notifications`);
  await wide.screenshot({ path: `${OUT}/notification-settings.png`, fullPage: true });

  const phone = await newPage(browser, { width: 390, height: 844 }, { deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  await signIn(phone, requireEnv("LINK2"));
  await phone.goto(`${BASE}/app?environment=all`);
  await phone.locator("#inbox-rows li").nth(5).waitFor();
  await phone.screenshot({ path: `${OUT}/inbox-phone.png` });
  await phone.goto(`${BASE}/app/actions/${deploy.id}`);
  await phone.screenshot({ path: `${OUT}/action-phone.png` });
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await phone.goto(`${BASE}/app/sources/${SOURCE_ID}`);
  const sourceOverflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await phone.screenshot({ path: `${OUT}/source-phone.png` });
  await phone.goto(`${BASE}/app/sources/${SOURCE_ID}/deliveries/${failed.id}`);
  await phone.screenshot({ path: `${OUT}/delivery-phone.png` });
  await phone.goto(`${BASE}/app/notifications`);
  const notificationsOverflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await phone.screenshot({ path: `${OUT}/notifications-phone.png` });
  await phone.goto(`${BASE}/app/settings/notifications`);
  const settingsOverflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await phone.screenshot({ path: `${OUT}/notification-settings-phone.png`, fullPage: true });

  return {
    files: ["inbox.png", "action.png", "source.png", "delivery.png", "inbox-phone.png", "action-phone.png", "source-phone.png", "delivery-phone.png",
      "notifications.png", "notification-settings.png", "notifications-phone.png", "notification-settings-phone.png"],
    phone_horizontal_overflow: overflow,
    source_phone_horizontal_overflow: sourceOverflow,
    notifications_phone_horizontal_overflow: notificationsOverflow,
    settings_phone_horizontal_overflow: settingsOverflow,
    csp_violations: [...wide.violations, ...phone.violations],
    script_errors: [...wide.errors, ...phone.errors],
  };
});
