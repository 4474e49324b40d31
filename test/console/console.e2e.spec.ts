// Proves issue 12 item 3, the web console, in a real browser (Debian Chromium through
// playwright-core) against a running budget-authority and agent-orchestrator with real
// data: one test per page, each asserting what a person sees, each page's screenshot kept
// under a temp directory (printed at the end) as a CI artefact.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';
import { adminHeaders, TEST_ADMIN_KEY } from '../support/auth.js';
import { openConsoleBrowser, type ConsoleBrowser } from './browser.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SUITE_TIMEOUT_MS = 300_000;
const PAGE_TIMEOUT_MS = 120_000;

const h = new OrchestratorHarness({ prefix: 'console', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
let ui: ConsoleBrowser;
let authorityUrl: string;
let root: Json;
let child: Json;
let workId: string;
let openHoldId: string;
const shots: string[] = [];

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = adminHeaders()) {
  const res = await fetch(`${authorityUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json, headers: res.headers };
}

async function ok(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Json> {
  const res = await api(method, path, body, headers);
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const subjectKey = () => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
const costGrant = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 100, currency: 'USD' };
const admit = (token: string, requestId: string) =>
  ok(
    'POST',
    '/v1/admissions',
    { request_id: requestId, token, server_id: 'cost-srv', tool_name: 'compute', parameters: {} },
    { authorization: `Bearer ${token}` },
  );

async function shoot(page: Page, name: string): Promise<void> {
  const file = join(ui.screenshots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
}

/** Opens a page of the console and waits until it has rendered. */
async function visit(hash: string): Promise<Page> {
  const page = ui.page;
  await page.evaluate((target) => {
    document.getElementById('page')!.dataset['ready'] = 'false';
    location.hash = target;
  }, hash);
  await page.waitForSelector('#page[data-ready="true"]', { timeout: 60_000 });
  return page;
}

beforeAll(async () => {
  // The orchestrator first: the authority is told where it is, for the work timeline.
  await h.start(1);
  await h.startAuthority({
    TALLY__CONSOLE__ORCHESTRATOR_URL: h.url,
    TALLY_FAULT_INJECTION: 'true',
    // An ambiguity must stay open long enough to be seen waiting for the reconciler.
    TALLY__AUTHORITY__RECONCILE_INTERVAL_MS: '3600000',
  });
  authorityUrl = h.authority!.url;
  root = await ok('POST', '/v1/capabilities', {
    subject_public_key: subjectKey(),
    ttl_seconds: 3600,
    grants: [
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 5,
        max_cost_per_invocation: 1_000,
        max_total_cost_units: 5_000,
        currency: 'USD',
      },
      { ...costGrant, max_total_cost_units: 1_000, reset: { every: 'day' } },
    ],
  });
  child = await ok('POST', '/v1/capabilities', {
    subject_public_key: subjectKey(),
    ttl_seconds: 1800,
    parent_id: root['id'],
    budget_share_units: 500,
    grants: [{ ...costGrant, max_total_cost_units: 500 }],
  });
  // A completed work unit: one metered attempt at 11 units (5 in, 3 out at the harness's price).
  h.provider().script('ok-model', [
    { kind: 'stream', chunks: ['console reply'], usage: { input_tokens: 5, output_tokens: 3 } },
  ]);
  const body = workBody({ token: root['token'] });
  workId = body['work_id'] as string;
  expect((await h.post('/v1/work', body)).status).toBe(202);
  await h.terminal(workId);
  // Spend of 40 on the cost grant, a hold left open on the child, and an ambiguous payment.
  const settled = await admit(root['token'], 'console-settled');
  await ok('POST', '/v1/settlements', {
    hold_id: settled['hold_id'],
    outcome: { kind: 'completed', cost_units: 40, currency: 'USD' },
  });
  openHoldId = (await admit(child['token'], 'console-open'))['hold_id'];
  await ok('POST', '/v1/test/faults', {
    references: { 'console-ambiguous': { authorize: 'rail_error_after_commit' } },
  });
  await admit(root['token'], 'console-ambiguous');
  await h.eventually('the ledger to show the spend and the ambiguity', async () => {
    const usage = (await ok('GET', `/v1/capabilities/${root['id']}/usage`))['grants'] as Json[];
    const ambiguities = (await ok('GET', '/v1/ambiguities'))['ambiguities'] as Json[];
    return usage[0]?.['committed_cost_units'] === 11 &&
      usage[1]?.['committed_cost_units'] === 40 &&
      ambiguities.length === 1
      ? true
      : undefined;
  });
  ui = await openConsoleBrowser(authorityUrl);
}, SUITE_TIMEOUT_MS);

afterAll(async () => {
  await ui?.close();
  await h.dispose();
  if (ui) process.stdout.write(`console screenshots (CI artefact): ${ui.screenshots}\n${shots.join('\n')}\n`);
}, 120_000);

describe('Issue 12: the web console in Chromium', () => {
  it(
    'Issue 12: the console is served with its content types and a CSP, signs in with an operator key only, and loads nothing from elsewhere',
    async () => {
      const index = await fetch(`${authorityUrl}/console/`);
      expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(index.headers.get('content-security-policy')).toContain("connect-src 'self'");
      const chart = await fetch(`${authorityUrl}/console/vendor/chart.umd.min.js`);
      expect(chart.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect((await chart.text()).length).toBeGreaterThan(100_000);
      expect((await fetch(`${authorityUrl}/console/../package.json`)).status).toBe(404);
      expect((await fetch(`${authorityUrl}/console/nothing.js`)).status).toBe(404);

      const page = ui.page;
      await page.goto(`${authorityUrl}/console/`);
      await page.getByLabel('Operator key or OIDC token').fill('tally_admin_not_a_key_0000000000000000');
      await page.keyboard.press('Enter');
      await expect(page.getByRole('alert').textContent()).resolves.toContain('That credential was not accepted');
      await shoot(page, '0-sign-in-refused');
      await page.getByLabel('Operator key or OIDC token').fill(TEST_ADMIN_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForSelector('#page[data-ready="true"]');
      expect(await page.locator('#who-text').textContent()).toBe('Signed in: admin of tenant default (bootstrap)');
      expect(await page.getByRole('navigation', { name: 'Console pages' }).isVisible()).toBe(true);
      expect(await page.locator('main').count()).toBe(1);
      // The key stays in the tab's session storage only, never in a cookie or the address.
      expect(await page.evaluate(() => document.cookie)).toBe('');
      expect(page.url()).not.toContain(TEST_ADMIN_KEY);
      expect(ui.foreignRequests).toEqual([]);
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: the tree shows tenants and capabilities with a usage bar per grant and per period',
    async () => {
      const page = await visit('#tree');
      const tenant = page.getByRole('heading', { name: /Tenant default/ });
      expect(await tenant.isVisible()).toBe(true);
      const rootNode = page.locator(`[data-capability="${root['id']}"]`);
      expect(await rootNode.getByRole('heading').first().textContent()).toContain('active');
      // The child sits inside the root's list: a tree, not a flat list.
      expect(
        await page.locator(`li:has([data-capability="${root['id']}"]) [data-capability="${child['id']}"]`).count(),
      ).toBe(1);
      const cost0 = rootNode.getByRole('meter', { name: 'Grant 0 cost' });
      expect(await cost0.getAttribute('aria-valuetext')).toBe('11 of 5,000 USD (0.2%)');
      expect(await rootNode.getByRole('meter', { name: 'Grant 0 invocations' }).getAttribute('aria-valuetext')).toBe(
        '1 of 5 invocations (20%)',
      );
      // Grant 1 resets daily: its current period carries the 40 settled today, the previous one nothing.
      expect(await rootNode.getByText('Current period').isVisible()).toBe(true);
      const current = rootNode.getByRole('meter', { name: 'Grant 1 current period cost' });
      expect(await current.getAttribute('aria-valuetext')).toBe('40 of 1,000 USD (4%)');
      expect(
        await rootNode.getByRole('meter', { name: 'Grant 1 previous period cost' }).getAttribute('aria-valuenow'),
      ).toBe('0');
      // The bar is drawn to its share: 4% of its track.
      const [fill, track] = await current.evaluate((el) => [
        (el.firstElementChild as HTMLElement).getBoundingClientRect().width,
        el.getBoundingClientRect().width,
      ]);
      expect(fill / track).toBeGreaterThan(0.03);
      expect(fill / track).toBeLessThan(0.05);
      await shoot(page, '1-tree');
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: open holds lists the hold open now with its exposure',
    async () => {
      const page = await visit('#holds');
      const row = page.getByRole('row', { name: new RegExp(openHoldId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) });
      expect(await row.count()).toBe(1);
      expect(await row.textContent()).toContain(child['id']);
      expect(await row.textContent()).toContain('100');
      await shoot(page, '2-holds');
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: spend over time is drawn by Chart.js on a canvas, with the same figures in a table',
    async () => {
      const page = await visit('#spend?bucket=minute');
      const canvas = page.locator('canvas#spend-chart');
      await page.waitForSelector('canvas#spend-chart[data-drawn="true"]');
      // Pixels were painted: a blank canvas has none that are not transparent.
      const painted = await canvas.evaluate((el) => {
        const c = el as HTMLCanvasElement;
        const data = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++;
        return n;
      });
      expect(painted).toBeGreaterThan(1_000);
      const table = await page.getByRole('table', { name: 'Spend per interval' }).textContent();
      expect(table).toContain('USD');
      // 11 for the work unit and 40 for the settled call, in this minute or split across two.
      const figures = await page.locator('table td.num').allTextContents();
      expect(figures.map((f) => Number(f.replace(/,/g, ''))).reduce((a, b) => a + b, 0)).toBe(51);
      expect(await page.locator('#bucket').inputValue()).toBe('minute');
      await shoot(page, '3-spend');
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: receipts show their signature verified in the browser, and a receipt changed in transit shows as invalid',
    async () => {
      const total = (await ok('GET', '/v1/receipts?limit=1'))['total'] as number;
      let page = await visit('#receipts');
      const valid = page.locator('td[data-signature="valid"]');
      expect(await valid.count()).toBe(Math.min(total, 50));
      expect(await page.locator('td[data-signature="invalid"]').count()).toBe(0);
      expect(await valid.first().textContent()).toBe('✓ Valid signature');
      expect(await page.getByRole('status').first().textContent()).toContain('every signature verifies');
      await shoot(page, '4-receipts');
      // One byte of one receipt changed on its way: only the browser's check can tell.
      await ui.context.route(/\/v1\/receipts\?/, async (route) => {
        const res = await route.fetch();
        const body = (await res.json()) as Json;
        const first = body['receipts'][0] as Json;
        first['request_id'] = `${String(first['request_id'])}x`;
        await route.fulfill({ response: res, json: body });
      });
      try {
        page = await visit('#tree');
        page = await visit('#receipts');
        expect(await page.locator('td[data-signature="invalid"]').count()).toBe(1);
        expect(await page.locator('td[data-signature="invalid"]').textContent()).toBe('✗ Invalid signature');
        expect(await page.getByRole('status').first().textContent()).toContain('1 signature does not verify');
        await shoot(page, '4-receipts-tampered');
      } finally {
        await ui.context.unroute(/\/v1\/receipts\?/);
      }
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    "Issue 12: a work unit's timeline shows its attempts from the orchestrator",
    async () => {
      const page = await visit('#work');
      await page.getByLabel('Work id').fill(workId);
      await page.getByRole('button', { name: 'Show timeline' }).click();
      await page.waitForSelector('ol.timeline');
      const timeline = page.getByRole('list', { name: `Timeline of work ${workId}` });
      const text = await timeline.textContent();
      expect(text).toContain('Submitted');
      expect(text).toContain('Attempt 1: scripted / ok-model');
      expect(text).toContain('5 in, 3 out, cost 11');
      expect(text).toContain('Now: completed');
      expect(text).toContain('console reply');
      expect(await page.getByText('1 attempt, metered by this authority.').isVisible()).toBe(true);
      await shoot(page, '5-work');
      await page.getByLabel('Work id').fill('no-such-work');
      await page.getByRole('button', { name: 'Show timeline' }).click();
      await page.waitForSelector('#page [role="alert"]');
      expect(await page.locator('#page [role="alert"]').textContent()).toContain('work no-such-work is unknown');
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: ambiguities lists the payment waiting for the reconciler',
    async () => {
      const page = await visit('#ambiguities');
      const row = page.getByRole('row', { name: /console-ambiguous/ });
      expect(await row.count()).toBe(1);
      expect(await row.textContent()).toContain('payment_authorization');
      expect(await page.getByText('1 ambiguity is waiting for the reconciler').isVisible()).toBe(true);
      await shoot(page, '6-ambiguities');
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: webhook deliveries show an honest state when the authority has none to show',
    async () => {
      const page = await visit('#webhooks');
      const text = await page.locator('#page').textContent();
      expect(text).toMatch(/does not offer webhooks yet|No webhooks are registered|No deliveries yet/);
      await shoot(page, '7-webhooks');
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: revoking asks for confirmation; cancel and Escape change nothing, confirming revokes',
    async () => {
      const page = await visit('#tree');
      const button = page.getByRole('button', { name: `Revoke ${child['id']}` });
      await button.click();
      const dialog = page.getByRole('dialog', { name: 'Revoke capability?' });
      expect(await dialog.isVisible()).toBe(true);
      expect(await dialog.textContent()).toContain(`Revoking ${child['id']} stops it`);
      await shoot(page, '8-revoke-confirm');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect(await dialog.isVisible()).toBe(false);
      await button.click();
      await page.keyboard.press('Escape');
      expect(await dialog.isVisible()).toBe(false);
      expect((await ok('GET', `/v1/capabilities/${child['id']}`))['revoked']).toBe(false);
      // Keyboard only: focus the button, open with Enter, move to Revoke and confirm.
      await button.focus();
      await page.keyboard.press('Enter');
      await dialog.getByRole('button', { name: 'Revoke' }).focus();
      await ui.page.evaluate(() => (document.getElementById('page')!.dataset['ready'] = 'false'));
      await page.keyboard.press('Enter');
      await page.waitForSelector('#page[data-ready="true"]');
      expect(await page.getByRole('status').textContent()).toBe(`Capability ${child['id']} revoked.`);
      expect(await page.locator(`[data-capability="${child['id']}"] h4`).textContent()).toContain('revoked');
      expect(await page.getByRole('button', { name: `Revoke ${child['id']}` }).count()).toBe(0);
      expect((await ok('GET', `/v1/capabilities/${child['id']}`))['revoked']).toBe(true);
      await shoot(page, '8-revoked');
      const csp = ui.pageErrors.filter((e) => /Content Security Policy|Refused to/.test(e));
      expect(csp).toEqual([]);
      expect(ui.foreignRequests).toEqual([]);
    },
    PAGE_TIMEOUT_MS,
  );

  it(
    'Issue 12: the console reads are scoped as the API is: a reader of another tenant sees no capability, a token only its own',
    async () => {
      await ok('POST', '/v1/tenants', { id: 'console-other' });
      const reader = await ok('POST', '/v1/tenants/console-other/keys', { role: 'reader' });
      const asReader = { authorization: `Bearer ${reader['key']}` };
      expect((await ok('GET', '/v1/capabilities', undefined, asReader))['capabilities']).toEqual([]);
      expect((await ok('GET', '/v1/holds', undefined, asReader))['holds']).toEqual([]);
      expect((await ok('GET', '/v1/spend?bucket=day', undefined, asReader))['series']).toEqual([]);
      expect(await ok('GET', '/v1/me', undefined, asReader)).toMatchObject({ kind: 'operator', role: 'reader' });
      const asRoot = { authorization: `Bearer ${root['token']}` };
      const own = (await ok('GET', '/v1/capabilities', undefined, asRoot))['capabilities'] as Json[];
      expect(own.map((c) => c['id'])).toEqual([root['id']]);
      const holds = (await ok('GET', '/v1/holds', undefined, asRoot))['holds'] as Json[];
      expect(holds.every((x) => x['capability_id'] === root['id'])).toBe(true);
      expect((await api('GET', '/v1/spend?bucket=week')).status).toBe(400);
      expect((await api('GET', '/v1/capabilities', undefined, {})).status).toBe(401);
    },
    PAGE_TIMEOUT_MS,
  );
});
