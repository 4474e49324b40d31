// Proves issue 12 items 1 and 2 against a running budget-authority: GET /v1/receipts pages every receipt in commit
// order within the caller's scope, `tally receipts export` writes them as JSONL with a progress bar, and `tally
// receipts verify` passes the export offline and names the line of an edited, deleted or reordered receipt (exit 1).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admitPayload, AuthorityStack, eventually, type Json } from '../budget/support/authority-stack.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { runTally } from './support/run-cli.js';

const grant = {
  server_id: 'cost-srv',
  tool_name: 'compute',
  max_cost_per_invocation: 100,
  max_total_cost_units: 10_000,
  currency: 'USD',
};
const admit = (token: string, requestId: string) => admitPayload(token, requestId, 'standalone');

/** Each CLI run is its own process; on a loaded 2-core machine a run takes seconds, and a test makes up to seven. */
const CLI_TEST_TIMEOUT_MS = 300_000;

let stack: AuthorityStack;
let dir: string;
let root: Json;
let child: Json;
let expected = 0;

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const cli = (args: string[], env: Record<string, string> = {}) =>
  runTally(args, { TALLY_AUTHORITY_URL: stack.url, TALLY_KEY: TEST_ADMIN_KEY, ...env });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tally-receipts-cli-'));
  stack = await AuthorityStack.create('cliexp');
  await stack.start();
  root = await stack.issue([grant]);
  child = await stack.issue([{ ...grant, max_total_cost_units: 1_000 }], {
    parent_id: root['id'],
    budget_share_units: 1_000,
    ttl_seconds: 1800,
  });
  for (let i = 0; i < 6; i++) {
    const decision = await stack.admit(admit((i % 3 === 2 ? child : root)['token'], `r-${i}`));
    expected++;
    if (decision['verdict'] === 'allow' && i % 2 === 0) {
      await stack.settle({
        hold_id: decision['hold_id'],
        outcome: { kind: 'completed', cost_units: 5 + i, currency: 'USD' },
      });
      expected++;
    }
  }
  await stack.admit(admit(`${root['token'].slice(0, -4)}AAAA`, 'forged'));
  expected++;
  await eventually(
    () => stack.ok('GET', '/v1/receipts?limit=1'),
    (page) => page['total'] === expected,
    60_000,
    'every receipt projected',
  );
}, 300_000);

afterAll(async () => {
  await stack?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('receipts listing, export and offline verification (issue 12 items 1, 2)', () => {
  it(
    'item 1 GET /v1/receipts pages every receipt oldest first with next_after, filters by capability and since, and scopes to the caller',
    async () => {
      const seen: Json[] = [];
      let after: string | null = null;
      for (let i = 0; i < 50; i++) {
        const page: Json = await stack.ok('GET', `/v1/receipts?limit=2${after ? `&after=${after}` : ''}`);
        seen.push(...(page['receipts'] as Json[]));
        after = page['next_after'] as string | null;
        if (after === null) break;
      }
      expect(seen).toHaveLength(expected);
      expect(new Set(seen.map((r) => r['id'])).size).toBe(expected);
      const childOnly = await stack.ok('GET', `/v1/receipts?capability_id=${child['id']}`);
      expect((childOnly['receipts'] as Json[]).map((r) => r['chain_index'])).toEqual(
        seen.filter((r) => r['capability_id'] === child['id']).map((_, i) => i),
      );
      const future = await stack.ok('GET', `/v1/receipts?since=${encodeURIComponent('2999-01-01T00:00:00Z')}`);
      expect({ receipts: future['receipts'], total: future['total'] }).toEqual({ receipts: [], total: 0 });
      // A capability token reads its own capability's receipts only; a key of another tenant reads none.
      const own = await stack.http('GET', '/v1/receipts', undefined, { authorization: `Bearer ${child['token']}` });
      expect((own.body['receipts'] as Json[]).every((r) => r['capability_id'] === child['id'])).toBe(true);
      expect(own.body['total']).toBe(childOnly['total']);
      await stack.ok('POST', '/v1/tenants', { id: 'other-tenant' });
      const reader = await stack.ok('POST', '/v1/tenants/other-tenant/keys', { role: 'reader' });
      const other = await stack.http('GET', '/v1/receipts', undefined, { authorization: `Bearer ${reader['key']}` });
      expect({ status: other.status, total: other.body['total'] }).toEqual({ status: 200, total: 0 });
      const bad = await stack.http('GET', '/v1/receipts?after=yesterday');
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('after');
      expect((await stack.http('GET', '/v1/receipts', undefined, { authorization: '' })).status).toBe(401);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'item 2 export writes every receipt as JSONL with a progress bar, and verify passes it offline with /v1/keys or a JWKS (exit 0)',
    async () => {
      const file = join(dir, 'all.jsonl');
      const exported = await cli(['receipts', 'export', '--out', file]);
      expect({ code: exported.code, stderr: exported.stderr }).toMatchObject({ code: 0 });
      expect(exported.stderr).toMatch(/\[#+\]\s+100%/);
      expect(lines(file)).toHaveLength(expected);
      writeFileSync(join(dir, 'keys.json'), JSON.stringify(await stack.ok('GET', '/v1/keys')));
      writeFileSync(join(dir, 'jwks.json'), JSON.stringify(await stack.ok('GET', '/.well-known/jwks.json')));
      // Offline: the authority's address points nowhere, so only the files can be used.
      const offline = { TALLY_AUTHORITY_URL: 'http://127.0.0.1:9', TALLY_KEY: '' };
      for (const keys of ['keys.json', 'jwks.json']) {
        const verified = await cli(['receipts', 'verify', file, '--keys', join(dir, keys)], offline);
        expect({ keys, code: verified.code }).toEqual({ keys, code: 0 });
        expect(verified.stdout).toContain(`${expected} receipts`);
        expect(verified.stdout).toContain(' 0 bad');
      }
      const json = await cli(['receipts', 'verify', file, '--keys', join(dir, 'keys.json'), '--json'], offline);
      expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, receipts: expected, bad: [] });
      const onlyChild = join(dir, 'child.jsonl');
      expect((await cli(['receipts', 'export', '--capability', child['id'], '--out', onlyChild])).code).toBe(0);
      expect(lines(onlyChild).map((l) => (JSON.parse(l) as Json)['capability_id'])).toEqual(
        lines(file)
          .map((l) => (JSON.parse(l) as Json)['capability_id'])
          .filter((id) => id === child['id']),
      );
      expect((await cli(['receipts', 'verify', onlyChild, '--keys', join(dir, 'keys.json')], offline)).code).toBe(0);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'item 2 verify names the line of an edited byte, of the receipt after a deleted one, and of reordered receipts, and exits 1',
    async () => {
      const file = join(dir, 'all.jsonl');
      const keys = join(dir, 'keys.json');
      const original = lines(file);
      const rootLines = original.flatMap((l, i) =>
        (JSON.parse(l) as Json)['capability_id'] === root['id'] ? [i] : [],
      );
      expect(rootLines.length).toBeGreaterThanOrEqual(4);
      const check = async (name: string, edited: string[]) => {
        writeFileSync(join(dir, name), `${edited.join('\n')}\n`);
        const run = await cli(['receipts', 'verify', join(dir, name), '--keys', keys], {
          TALLY_AUTHORITY_URL: 'http://127.0.0.1:9',
        });
        expect(run.stderr).not.toMatch(/\n\s+at /);
        return {
          code: run.code,
          named: [...run.stdout.matchAll(/^line (\d+)/gm)].map((m) => Number(m[1])),
          out: run.stdout,
        };
      };

      // One byte of a receipt's reason changes: that line, and only it, is named.
      const target = rootLines[1]!;
      const edited = [...original];
      edited[target] = original[target]!.replace(
        /"verdict":"(allow|deny)"/,
        (_, v: string) => `"verdict":"${v === 'allow' ? 'alloW' : 'denY'}"`,
      );
      expect(edited[target]).not.toBe(original[target]);
      const byte = await check('edited.jsonl', edited);
      expect({ code: byte.code, named: byte.named }).toEqual({ code: 1, named: [target + 1] });
      expect(byte.out).toContain('signature does not verify');

      // A receipt deleted from the middle of a chain: the next receipt of that chain says one is missing.
      const deleted = original.filter((_, i) => i !== rootLines[1]);
      const gap = await check('deleted.jsonl', deleted);
      expect({ code: gap.code, named: gap.named }).toEqual({ code: 1, named: [rootLines[2]!] });
      expect(gap.out).toContain('1 receipt missing');

      // Two receipts of one chain swapped: both are named.
      const swapped = [...original];
      [swapped[rootLines[1]!], swapped[rootLines[2]!]] = [original[rootLines[2]!]!, original[rootLines[1]!]!];
      const reordered = await check('reordered.jsonl', swapped);
      expect({ code: reordered.code, named: reordered.named }).toEqual({
        code: 1,
        named: [rootLines[1]! + 1, rootLines[2]! + 1],
      });
      expect(reordered.out).toContain('reordered');
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'item 1 exit codes: no key is 4, an authority that does not answer is 3, a missing file is 2; no stack traces',
    async () => {
      const noKey = await cli(['receipts', 'export'], { TALLY_KEY: '' });
      expect({ code: noKey.code, hint: noKey.stderr.includes('--key') }).toEqual({ code: 4, hint: true });
      const down = await cli(['receipts', 'export', '--authority', 'http://127.0.0.1:9']);
      expect({ code: down.code, hint: down.stderr.includes('--authority') }).toEqual({ code: 3, hint: true });
      const missing = await cli(['receipts', 'verify', join(dir, 'nope.jsonl')]);
      expect(missing.code).toBe(2);
      for (const run of [noKey, down, missing]) expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(noKey.stderr).not.toContain(TEST_ADMIN_KEY);
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
