// The browser sign-in in real headless Chromium, against a real OpenID
// Provider on loopback (idp-oidc-provider.mjs): a signed-out person opens the
// dashboard, picks the provider on the sign-in page, signs in and consents at
// the provider, and lands back on the dashboard with a cookie session. Then
// the open-redirect attempts: `next` pointing at another site is refused
// before any redirect.
//
// Env: BASE_URL (hds), PROVIDER_LABEL (the button text after "Continue with"),
// LOGIN (the provider login name), CHROMIUM (optional binary path).
// Prints one JSON result as the last line of stdout.

import { chromium } from 'playwright-core';

const BASE = required('BASE_URL');
const LABEL = required('PROVIDER_LABEL');
const LOGIN = required('LOGIN');

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const context = await browser.newContext();
  // Loopback only: the provider's dev pages import a web font; nothing may
  // leave the machine.
  await context.route((url) => url.hostname !== '127.0.0.1', (route) => route.abort());
  const page = await context.newPage();
  page.setDefaultTimeout(15000);

  // Signed out: the dashboard sends the person to its sign-in page.
  await page.goto(`${BASE}/app`);
  await page.waitForURL((u) => u.pathname === '/app/signin');
  await page.getByRole('link', { name: `Continue with ${LABEL}` }).click();

  // The provider's own login and consent pages.
  await page.locator('input[name=login]').fill(LOGIN);
  await page.locator('input[name=password]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();

  // Back at hds, signed in, where the person set out to go.
  await page.waitForURL((u) => u.origin === new URL(BASE).origin && u.pathname === '/app');
  const landed = page.url();
  const session = await context.request.get(`${BASE}/v1/auth/session`);
  const sessionBody = await session.json();
  const cookies = await context.cookies(BASE);

  // Open-redirect attempts: refused at hds, the browser never leaves it.
  const evil = [];
  for (const next of ['https://evil.example', '//evil.example']) {
    const res = await page.goto(`${BASE}/v1/auth/op/start?next=${encodeURIComponent(next)}`);
    evil.push({ next, status: res.status(), url: page.url() });
  }

  console.log(JSON.stringify({
    landed,
    session_status: session.status(),
    email: sessionBody?.data?.user?.email,
    method: sessionBody?.data?.method,
    session_cookie: cookies.find((c) => c.name === 'service_session') ?? null,
    evil,
  }));
} finally {
  await browser.close();
}
