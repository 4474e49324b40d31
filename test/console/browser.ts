// Headless Debian Chromium for the console suites, driven by playwright-core (which never
// downloads a browser). A machine without Chromium fails the suite, saying what to install.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** Without the networking flags Chromium keeps calling hosts this machine cannot reach (stack.md). */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface ConsoleBrowser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every request the page made to anything but the authority (there must be none). */
  readonly foreignRequests: string[];
  /** Console errors and CSP violations the page reported. */
  readonly pageErrors: string[];
  readonly screenshots: string;
  /** Lets the page also load from another origin of this stack (a second authority replica). */
  allow(origin: string): void;
  close(): Promise<void>;
}

export async function openConsoleBrowser(origin: string): Promise<ConsoleBrowser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`,
    );
  const userDataDir = mkdtempSync(join(tmpdir(), 'tally-console-chromium-'));
  // A fresh profile per run (stack.md); Playwright passes it as --user-data-dir itself.
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    timeout: 60_000,
    viewport: { width: 1280, height: 900 },
  });
  const foreignRequests: string[] = [];
  const origins = [origin];
  const pageErrors: string[] = [];
  // Everything must come from the authority: any other host is recorded and refused.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (origins.some((o) => url.startsWith(o)) || url.startsWith('data:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const screenshots = mkdtempSync(join(tmpdir(), 'tally-console-screenshots-'));
  return {
    context,
    page,
    foreignRequests,
    pageErrors,
    screenshots,
    allow: (other) => void origins.push(other),
    close: async () => {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs in the page: every visible element with its own text whose contrast against the
 * background behind it is under WCAG AA (4.5:1, or 3:1 for large text), with its ratio.
 * Kept as text because this program is typed for Node, without the DOM's names.
 */
export const LOW_CONTRAST_SCRIPT = `(() => {
  const rgba = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
    if (!own || el.closest('[hidden], dialog:not([open])') || el.getClientRects().length === 0) continue;
    const style = getComputedStyle(el);
    const [a, b] = [lum(rgba(style.color).slice(0, 3)), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) out.push(el.textContent.trim().slice(0, 40) + ' ' + ratio.toFixed(2));
  }
  return out;
})()`;
