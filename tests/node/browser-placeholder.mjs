// Scenario: placeholder text is read against its field in both colour
// schemes (WCAG 1.4.3: at least 4.5:1); the browser's own grey was 3.8:1
// on the dark field. Measured on the Account page's token name field.
import { BASE, newPage, requireEnv, run, signIn } from "./browser-lib.mjs";

const LINK = requireEnv("LINK");

run(async (browser) => {
  const out = {};
  const pages = [];
  let signedIn = null;
  for (const scheme of ["light", "dark"]) {
    const page = await newPage(browser, { width: 1280, height: 800 }, { colorScheme: scheme, ...(signedIn ? { storageState: signedIn } : {}) });
    if (!signedIn) {
      await signIn(page, LINK);
      signedIn = await page.context().storageState();
    }
    pages.push(page);
    await page.goto(`${BASE}/app/account`);
    out[scheme] = await page.evaluate(() => {
      const rgb = (s) => s.match(/[\d.]+/g).slice(0, 3).map(Number);
      const lum = ([r, g, b]) => {
        const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      return [...document.querySelectorAll("input[placeholder]")]
        .filter((el) => el.offsetParent !== null)
        .map((el) => {
          const fg = lum(rgb(getComputedStyle(el, "::placeholder").color));
          const bg = lum(rgb(getComputedStyle(el).backgroundColor));
          const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
          return { name: el.name, ratio: Math.round(ratio * 100) / 100 };
        });
    });
  }
  return {
    ...out,
    csp_violations: pages.flatMap((p) => p.violations),
    script_errors: pages.flatMap((p) => p.errors),
  };
});
