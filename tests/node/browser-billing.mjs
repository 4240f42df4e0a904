// The Billing page's two Stripe buttons in Chromium: "Subscribe to …" and
// "Manage plan and payment" land on Stripe's site (answered here by a route,
// as this machine cannot reach Stripe), under the page's CSP, whose
// `form-action 'self'` stops browsers from following a form post's redirect
// to another site.
import { BASE, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

run(async (browser) => {
  const page = await newPage(browser);
  const stripe = [];
  for (const host of ["https://checkout.stripe.test/**", "https://billing.stripe.test/**"]) {
    await page.route(host, (route) => {
      stripe.push(route.request().url());
      return route.fulfill({ status: 200, contentType: "text/html", body: "<title>Stripe</title><p>Stripe</p>" });
    });
  }
  await signIn(page, requireEnv("LINK"));

  await page.goto(`${BASE}/app/billing`);
  await page.getByRole("button", { name: "Subscribe to Team" }).click();
  await page.waitForURL(/^https:\/\/checkout\.stripe\.test\//);
  const checkout = page.url();

  await page.goto(`${BASE}/app/billing`);
  await page.getByRole("button", { name: "Manage plan and payment" }).click();
  await page.waitForURL(/^https:\/\/billing\.stripe\.test\//);
  const portal = page.url();

  return { checkout, portal, stripe, csp_violations: page.violations, script_errors: page.errors };
});
