// Headless Debian Chromium for the console suites, driven by playwright-core (which never
// downloads a browser). A machine without Chromium fails the suite, saying what to install.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

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
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every request the page made to anything but the authority (there must be none). */
  readonly foreignRequests: string[];
  /** Console errors and CSP violations the page reported. */
  readonly pageErrors: string[];
  readonly screenshots: string;
  close(): Promise<void>;
}

export async function openConsoleBrowser(origin: string): Promise<ConsoleBrowser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`,
    );
  const userDataDir = mkdtempSync(join(tmpdir(), 'tally-console-chromium-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [...FLAGS, `--user-data-dir=${userDataDir}`],
    timeout: 60_000,
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const foreignRequests: string[] = [];
  const pageErrors: string[] = [];
  // Everything must come from the authority: any other host is recorded and refused.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const screenshots = mkdtempSync(join(tmpdir(), 'tally-console-screenshots-'));
  return {
    browser,
    context,
    page,
    foreignRequests,
    pageErrors,
    screenshots,
    close: async () => {
      await context.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
    },
  };
}
