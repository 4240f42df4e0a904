// Every dashboard page carries the CSP, has no inline script or style, and
// the browser reports no CSP violation, even on an Action whose Markdown
// tries to inject script, inline styles and remote images.
import { BASE, createAction, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const SOURCE_KEY = requireEnv("SOURCE_KEY");

run(async (browser) => {
  const page = await newPage(browser);
  const pages = {};
  async function visit(name, url) {
    const res = await page.goto(url);
    pages[name] = {
      status: res.status(),
      csp: res.headers()["content-security-policy"] || null,
      inline_scripts: await page.locator("script:not([src])").count(),
      style_elements: await page.locator("style").count(),
      style_attributes: await page.locator("[style]").count(),
      svg_charts: await page.locator("svg.chart").count(),
      svg_chart_titles: await page.locator("svg.chart > title").count(),
      handler_attributes: await page.evaluate(
        () => [...document.querySelectorAll("*")].filter((el) => [...el.attributes].some((a) => a.name.startsWith("on"))).length,
      ),
    };
  }

  await visit("signin", `${BASE}/app/signin`);
  await visit("guide_signed_out", `${BASE}/app/guide`);
  await signIn(page, requireEnv("LINK"));
  const hostile = await createAction(SOURCE_KEY, {
    title: "Markdown that tries too much",
    description:
      'Hello <script>window.__pwned = 1</script> <b style="color:red" onclick="window.__pwned=2">bold</b>\n\n' +
      "![tracker](https://tracker.example/pixel.png) [click](javascript:window.__pwned=3)\n\n<iframe src=\"https://evil.example\"></iframe>",
    options: [{ id: "ok", label: "OK" }],
  });
  await visit("inbox", `${BASE}/app`);
  await visit("action", `${BASE}/app/actions/${hostile.id}`);
  const description = {
    pwned: await page.evaluate(() => window.__pwned ?? null),
    images: await page.locator("#description img").count(),
    iframes: await page.locator("iframe").count(),
    javascript_links: await page.locator('a[href^="javascript"]').count(),
    text: (await page.locator("#description").innerText()).trim(),
  };
  await page.locator("#description").click();
  description.pwned_after_click = await page.evaluate(() => window.__pwned ?? null);
  await visit("sources", `${BASE}/app/sources`);
  await visit("source", `${BASE}/app/sources/${requireEnv("SOURCE_ID")}`);
  await visit("account", `${BASE}/app/account`);
  await visit("analytics", `${BASE}/app/analytics?window=7d`);
  await visit("notifications", `${BASE}/app/notifications`);
  await visit("notification_settings", `${BASE}/app/settings/notifications`);
  await visit("notification_policy", `${BASE}/app/settings/notification-policy`);
  await visit("guide", `${BASE}/app/guide`);

  return { pages, description, csp_violations: page.violations, script_errors: page.errors };
});
