// Every dashboard page at 1280 and at 390 px, from a realistic workspace:
// several Sources, priorities, a test-key request, typed interactions, an
// Action page with Markdown, context blocks and controls, a Source page with
// its webhook delivery log (the receiver answers the first delivery 410, the
// next ones 200; HOOK_DOWN refuses connections), decided Actions with
// outcomes, and runs (one waiting on a review, one done, one failed).
// Writes the README's screenshots to OUT_DIR and reports, per page at the
// phone's width, any sideways scroll and any word broken across lines.
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
    expires_at: new Date(Date.now() + 3 * 3600 * 1000 + 60 * 1000).toISOString().replace(/\.\d+Z$/, "Z"),
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
  // A comment of the signed-in person's own: its Edit and Delete show.
  await ok(
    await api("POST", `/v1/actions/${deploy.id}/comments`, USER_TOKEN, { body: "Canary looks healthy; **go ahead** after the EU window." }),
    "comment",
  );
  const lastLog = await ok(await api("GET", `/v1/sources/${SOURCE_ID}/deliveries`, USER_TOKEN), "deliveries");
  const failed = lastLog.data.find((d) => d.status === "failed") || lastLog.data[0];

  // Work that was decided and acted on, for the analytics page and the
  // Resolved tab; a run with progress, a message and one Action of its own.
  for (const [i, title] of ["Merge PR #311 into main", "Scale the worker pool to 12", "Purge the CDN cache for /docs"].entries()) {
    const a = await createAction(SOURCE_KEY, { title, options: [{ id: "approve", label: "Approve", style: "primary" }, { id: "reject", label: "Reject" }] });
    await ok(
      await api("POST", `/v1/actions/${a.id}/decision`, USER_TOKEN, {
        action_version: a.action_version,
        fingerprint: a.fingerprint,
        option_id: i === 2 ? "reject" : "approve",
        reason: i === 2 ? "Not during the sale" : "Looks good",
      }),
      "decide",
    );
    if (i < 2) {
      await ok(
        await api("POST", `/v1/actions/${a.id}/outcome`, SOURCE_KEY, {
          status: i === 0 ? "success" : "failed",
          duration_ms: 4200,
          action_version: a.action_version,
          fingerprint: a.fingerprint,
          message: i === 0 ? undefined : "2 of 12 workers did not start",
        }),
        "outcome",
      );
    }
  }
  const importRun = await ok(await api("POST", "/v1/runs", SOURCE_KEY, { name: "Nightly import of supplier catalogue", status: "running", total: 1200 }), "run");
  const RUN_ID = importRun.data.id;
  await ok(await api("PATCH", `/v1/source/runs/${RUN_ID}/progress`, SOURCE_KEY, { completed: 480, message: "Imported 480 of 1,200 products" }), "progress");
  await createAction(SOURCE_KEY, {
    title: "Overwrite 37 prices that differ by more than 20 %?",
    run_id: RUN_ID,
    options: [{ id: "overwrite", label: "Overwrite", style: "primary" }, { id: "skip", label: "Keep current prices" }],
  });
  await ok(await api("PATCH", `/v1/source/runs/${RUN_ID}/progress`, SOURCE_KEY, { completed: 720, message: "Waiting for a price review", status: "waiting" }), "progress");
  const done = await ok(await api("POST", "/v1/runs", SOURCE_KEY, { name: "Re-index search", status: "running", total: 40 }), "run");
  await ok(await api("PATCH", `/v1/source/runs/${done.data.id}/progress`, SOURCE_KEY, { completed: 40 }), "progress");
  await ok(await api("POST", `/v1/source/runs/${done.data.id}/complete`, SOURCE_KEY, { status: "succeeded" }), "complete");
  const broken = await ok(await api("POST", "/v1/runs", SOURCE_KEY, { name: "Sync CRM contacts", status: "running", total: 900 }), "run");
  await ok(await api("PATCH", `/v1/source/runs/${broken.data.id}/progress`, SOURCE_KEY, { completed: 310 }), "progress");
  await ok(await api("POST", `/v1/source/runs/${broken.data.id}/complete`, SOURCE_KEY, { status: "failed", error: "CRM API answered 503 for 5 minutes" }), "complete");

  // Every page, at a laptop's width and at a phone's. At 390 px nothing may
  // scroll sideways and no word may be broken across lines. `shot` names
  // the file written (README and docs); the others are only measured.
  const pagesToVisit = [
    { name: "inbox", url: "/app?environment=all", shot: "inbox", ready: "#inbox-rows li >> nth=5" },
    { name: "resolved", url: "/app?status=resolved&environment=all", shot: "inbox-resolved" },
    { name: "cancelled", url: "/app?status=cancelled&environment=all" },
    { name: "awaiting_vote", url: "/app?scope=needs_my_vote" },
    { name: "action", url: `/app/actions/${deploy.id}`, shot: "action", full: true },
    { name: "sources", url: "/app/sources" },
    { name: "source", url: `/app/sources/${SOURCE_ID}`, shot: "source" },
    { name: "delivery", url: `/app/sources/${SOURCE_ID}/deliveries/${failed.id}`, shot: "delivery" },
    { name: "runs", url: "/app/runs", shot: "runs" },
    { name: "run", url: `/app/runs/${RUN_ID}`, shot: "run", full: true },
    { name: "analytics", url: "/app/analytics?window=7d", shot: "analytics", full: true },
    { name: "billing", url: "/app/billing", shot: "billing" },
    { name: "account", url: "/app/account", shot: "account" },
    { name: "workspaces", url: "/app/workspaces" },
    { name: "members", url: "/app/members" },
    { name: "invitations", url: "/app/invitations" },
    { name: "notifications", url: "/app/notifications", shot: "notifications" },
    { name: "notification_settings", url: "/app/settings/notifications", shot: "notification-settings", full: true },
    { name: "emails", url: "/app/settings/emails" },
    { name: "notification_policy", url: "/app/settings/notification-policy" },
    { name: "guide", url: "/app/guide", shot: "guide" },
    // The link of a notification mail: it shows, and changes nothing.
    { name: "unsubscribe", url: requireEnv("UNSUBSCRIBE"), shot: "unsubscribe" },
    { name: "not_found", url: "/app/no-such-page", status: 404 },
  ];
  // Words that the layout split across lines (a table header wrapping per
  // letter), found by measuring each word of the page's text with a Range.
  // A break after a hyphen, dash or slash is a word's own (ap-/south-1), and
  // identifiers in code (a 71-character fingerprint) may wrap anywhere.
  const brokenWords = () =>
    [...document.querySelectorAll("body *")]
      .filter((el) => el.offsetParent !== null && el.getBoundingClientRect().width > 1 && !el.closest("code, pre, samp, kbd"))
      .flatMap((el) =>
        [...el.childNodes]
          .filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())
          .flatMap((n) => {
            const out = [];
            const re = /[^\s/\-\u2013\u2014]+/g;
            let m;
            while ((m = re.exec(n.textContent))) {
              const r = document.createRange();
              r.setStart(n, m.index);
              r.setEnd(n, m.index + m[0].length);
              const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
              if (lines.size > 1) out.push(`${el.tagName.toLowerCase()}: ${m[0]}`);
            }
            return out;
          }),
      );
  const files = [];
  const phoneChecks = {};
  const rows = {};
  const wide = await newPage(browser, { width: 1280, height: 800 });
  const phone = await newPage(browser, { width: 390, height: 844 }, { deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  // Signed out first: the sign-in page and the guide as a stranger sees them.
  for (const [name, url] of [["signin", "/app/signin"], ["guide_signed_out", "/app/guide"]]) {
    if (name === "signin") {
      for (const [page, suffix] of [[wide, ""], [phone, "-phone"]]) {
        await page.goto(`${BASE}${url}`);
        await page.screenshot({ path: `${OUT}/signin${suffix}.png` });
        files.push(`signin${suffix}.png`);
      }
    }
    await phone.goto(`${BASE}${url}`);
    phoneChecks[name] = {
      horizontal_overflow: await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
      broken_words: await phone.evaluate(brokenWords),
    };
  }
  await signIn(wide, requireEnv("LINK"));
  await signIn(phone, requireEnv("LINK2"));
  for (const p of pagesToVisit) {
    for (const [page, suffix] of [[wide, ""], [phone, "-phone"]]) {
      const res = await page.goto(`${BASE}${p.url}`);
      if (res.status() !== (p.status || 200)) throw new Error(`${p.url}: ${res.status()}`);
      if (p.ready) await page.locator(p.ready).waitFor();
      if (page === wide && p.name === "inbox") {
        rows.nav_count = (await page.locator("#nav-open-count").innerText()).trim();
        rows.open_tab = (await page.locator('.tabs a[aria-current="page"] .count').innerText()).trim();
        rows.deadlines = await page.locator("#inbox-rows .row-deadline").allInnerTexts();
      }
      if (page === wide && p.name === "resolved") rows.decided = await page.locator("#inbox-rows .row-decided").allInnerTexts();
      if (page === wide && p.name === "cancelled") {
        rows.cancelled = await page.locator("#inbox-rows li").count();
        rows.cancelled_decided = await page.locator("#inbox-rows .row-decided").allInnerTexts();
      }
      if (p.shot) {
        const file = `${p.shot}${suffix}.png`;
        await page.screenshot({ path: `${OUT}/${file}`, fullPage: !!p.full });
        files.push(file);
      }
      if (page === phone) {
        phoneChecks[p.name] = {
          horizontal_overflow: await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
          broken_words: await page.evaluate(brokenWords),
        };
      }
    }
  }

  // Made last, so that the pages above (and the screenshots) do not show
  // it: the longest labels the limits allow, and the hashes and URLs kv
  // blocks hold, must wrap inside the phone's width. Words as long as a
  // hash may break anywhere here, so only sideways scroll is measured.
  const long = await createAction(SOURCE_KEY, {
    title: "Options, controls and context at the lengths the limits allow",
    context: [
      {
        type: "kv",
        items: [
          { key: "fingerprint", value: `sha256:${"ab".repeat(32)}` },
          { key: "artifact_url_with_a_long_key_name_without_spaces", value: `https://artifacts.example.com/releases/2026-11-26/build-${"1234567890abcdef".repeat(2)}.tar.gz` },
        ],
      },
    ],
    controls: [
      { key: "logs", label: "Open the full build logs for this pipeline run in the continuous integration system", kind: "link", url: "https://ci.example.com/x" },
      { key: "raw", label: "X".repeat(100), kind: "link", url: "https://ci.example.com/y" },
    ],
    options: [
      { id: "a", label: "Approve the deployment of build 1234 to production eu-west-1 and page the on-call team right away", style: "primary" },
      { id: "b", label: "Reject and roll back everything that was started by this pipeline run today in every region", style: "destructive" },
      { id: "c", label: "Y".repeat(100) },
    ],
  });
  // Words of 100 and 200 characters without a break: a choice label, a
  // Source's name and a run's name (page titles).
  const choice = await createAction(SOURCE_KEY, {
    title: "A choice with an unbroken label",
    interaction: { type: "choice", choices: [{ id: "z", label: "Z".repeat(100) }, { id: "ok", label: "Fine" }] },
  });
  const longSource = await ok(await api("POST", "/v1/sources", USER_TOKEN, { name: "S".repeat(100) }), "source");
  const longRun = await ok(await api("POST", "/v1/runs", SOURCE_KEY, { name: "R".repeat(200) }), "run");
  for (const page of [wide, phone]) {
    const res = await page.goto(`${BASE}/app/actions/${long.id}`);
    if (res.status() !== 200) throw new Error(`long action: ${res.status()}`);
  }
  for (const [name, url] of [
    ["action_choice_unbroken", `/app/actions/${choice.id}`],
    ["source_unbroken_name", `/app/sources/${longSource.data.id}`],
    ["run_unbroken_name", `/app/runs/${longRun.data.id}`],
  ]) {
    const res = await phone.goto(`${BASE}${url}`);
    if (res.status() !== 200) throw new Error(`${url}: ${res.status()}`);
    phoneChecks[name] = {
      horizontal_overflow: await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
      broken_words: [],
    };
  }
  // A proposed answer to edit, an option that needs a reason, and the
  // confirmation after a decision that leads on to the next request.
  const proposed = await createAction(SOURCE_KEY, {
    title: "Reply to ticket 881: refund delayed",
    interaction: { type: "text", max_length: 2000, default: "Hi Ana, sorry for the wait: the refund of $84.00 went out today and should reach your card within 5 business days." },
  });
  const needsReason = await createAction(SOURCE_KEY, {
    title: "Merge pull request #412: retry payments on timeout",
    options: [{ id: "approve", label: "Approve", style: "primary" }, { id: "changes", label: "Request changes", reason_required: true }],
  });
  for (const [name, url, shot] of [
    ["action_proposed", `/app/actions/${proposed.id}`, "action-proposed"],
    ["action_reason_required", `/app/actions/${needsReason.id}`, null],
    ["action_decided_next", `/app/actions/${deploy.id}?done=decided`, "action-decided-next"],
  ]) {
    for (const [page, suffix] of [[wide, ""], [phone, "-phone"]]) {
      const res = await page.goto(`${BASE}${url}`);
      if (res.status() !== 200) throw new Error(`${url}: ${res.status()}`);
      if (shot) {
        await page.screenshot({ path: `${OUT}/${shot}${suffix}.png` });
        files.push(`${shot}${suffix}.png`);
      }
    }
    phoneChecks[name] = {
      horizontal_overflow: await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
      broken_words: await phone.evaluate(brokenWords),
    };
  }
  await phone.goto(`${BASE}/app/actions/${long.id}`);
  phoneChecks.action_long_labels = {
    horizontal_overflow: await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    broken_words: [],
    // Every button's text stays inside its button.
    spilling_buttons: await phone.evaluate(() =>
      [...document.querySelectorAll(".btn")]
        .filter((b) => b.offsetParent !== null && b.scrollWidth > b.clientWidth + 1)
        .map((b) => b.textContent.trim().slice(0, 40)),
    ),
  };

  // An unbroken title of 200 characters in the inbox: it wraps inside its
  // row at 1280 px, and every row keeps its side column (age, kind) in view.
  await createAction(SOURCE_KEY, { title: "W".repeat(200), interaction: { type: "boolean" } });
  const spill = () =>
    [...document.querySelectorAll(".rows .row-link")]
      .filter((r) => {
        const box = r.getBoundingClientRect();
        const side = r.querySelector(".row-side")?.getBoundingClientRect();
        return r.scrollWidth > r.clientWidth + 1 || (side && side.right > box.right + 1);
      })
      .map((r) => r.textContent.trim().slice(0, 40));
  await wide.goto(`${BASE}/app`);
  const wideRowsSpilling = await wide.evaluate(spill);
  await phone.goto(`${BASE}/app`);
  phoneChecks.inbox_unbroken_title = {
    horizontal_overflow: await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    broken_words: [],
    spilling_buttons: await phone.evaluate(spill),
  };

  return {
    files,
    wide_rows_spilling: wideRowsSpilling,
    phone: phoneChecks,
    rows,
    csp_violations: [...wide.violations, ...phone.violations],
    script_errors: [...wide.errors, ...phone.errors],
  };
});
