// Shared by the browser-*.mjs scenarios that tests/api/browser.rs runs: launch
// headless Chromium, sign in with a one-time link, call the API as a Source,
// watch for CSP violations, ask the Rust side to wait for server state, and
// print one JSON result as the last line of stdout.
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

export const BASE = requireEnv("BASE_URL");

export function requireEnv(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** Headless Chromium with the flags of the project's contract. */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * A page that records CSP violations (console messages and
 * `securitypolicyviolation` events) and uncaught script errors.
 */
const pages = [];

export async function newPage(browser, viewport = { width: 1280, height: 800 }, extra = {}) {
  const context = await browser.newContext({ viewport, ...extra });
  const page = await context.newPage();
  pages.push(page);
  page.violations = [];
  page.errors = [];
  page.on("console", (msg) => {
    const text = msg.text();
    if (/Content Security Policy|Refused to (execute|apply|load|connect)/i.test(text)) page.violations.push(text);
  });
  page.on("pageerror", (err) => page.errors.push(String(err)));
  await context.exposeBinding("__reportViolation", (_src, text) => page.violations.push(text));
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__reportViolation(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
    });
  });
  page.setDefaultTimeout(15000);
  return page;
}

/** Opens the link's confirmation page, presses Continue, lands on the inbox. */
export async function signIn(page, link) {
  await page.goto(link);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL(`${BASE}/app`);
}

/** A JSON call to the API with a bearer key or token. */
export async function api(method, path, key, body) {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

export async function createAction(key, body) {
  const r = await api("POST", "/v1/actions", key, body);
  if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/**
 * Asks the Rust test to wait for something only it can observe (e.g. a long
 * poll held by the server) and waits for its "ok".
 */
export async function ask(question) {
  process.stdout.write(JSON.stringify({ ask: question }) + "\n");
  const { value, done } = await lines.next();
  if (done || value.trim() !== "ok") throw new Error(`no ok for ${JSON.stringify(question)}: ${value}`);
}

/** Runs a scenario; prints its result (or the failure) as the last line. */
export async function run(scenario) {
  const browser = await launch();
  let result;
  try {
    result = { ok: true, ...(await scenario(browser)) };
  } catch (e) {
    // Where each page was and what it said, for the failure message.
    const seen = [];
    for (const p of pages) {
      const text = await p.locator("body").innerText({ timeout: 1000 }).catch(() => "");
      seen.push(`${p.url()}\n${text.slice(0, 1500)}`);
    }
    result = { ok: false, error: `${e && e.stack ? e.stack : e}\n--- pages ---\n${seen.join("\n---\n")}` };
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exit(0);
}
