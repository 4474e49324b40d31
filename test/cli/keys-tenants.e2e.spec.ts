// Issue 8 item 6 and issue 12 item 1 against a running budget-authority: `tally keys
// list|rotate|retire` and `tally tenants list|create`, `tally tenants keys list|create|delete`,
// as JSON and as tables, with the documented exit codes (0 ok, 1 failed, 2 usage,
// 3 unavailable, 4 refused, 5 not found).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AuthorityStack, type Json } from '../budget/support/authority-stack.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { runTally } from './support/run-cli.js';

/** Each CLI run is its own process; on a loaded 2-core machine a run takes seconds. */
const CLI_TEST_TIMEOUT_MS = 300_000;

let stack: AuthorityStack;
let keyring: string;
const cli = (args: string[], key: string | undefined = TEST_ADMIN_KEY) =>
  runTally(args, { TALLY_AUTHORITY_URL: stack.url, TALLY_KEY: key });
const json = (stdout: string) => JSON.parse(stdout) as Json;

beforeAll(async () => {
  keyring = mkdtempSync(join(tmpdir(), 'tally-keys-cli-'));
  stack = await AuthorityStack.create('clikeys', { faultInjection: false, env: { TALLY_KEYRING_DIR: keyring } });
  await stack.start();
}, 180_000);
afterAll(async () => {
  await stack?.dispose();
  rmSync(keyring, { recursive: true, force: true });
}, 60_000);

describe('Issue 8: tally keys and tally tenants', () => {
  it(
    'Issue 8: tally keys list shows the published keys, rotate adds an active key, retire unpublishes the old one',
    async () => {
      const before = await cli(['keys', 'list', '--json'], '');
      expect(before.code).toBe(0);
      const [first] = json(before.stdout)['keys'] as Json[];
      expect(first).toMatchObject({ status: 'active', algorithm: 'ed25519' });

      const rotated = await cli(['keys', 'rotate', '--json']);
      expect(rotated.code).toBe(0);
      const second = json(rotated.stdout);
      expect(second).toMatchObject({ status: 'active', previous_key_id: first!['key_id'] });

      const table = await cli(['keys', 'list'], '');
      expect(table.code).toBe(0);
      const rows = table.stdout.trim().split('\n');
      expect(rows[0]).toMatch(/^KEY_ID\s+STATUS\s+ALGORITHM\s+PUBLIC_KEY$/);
      expect(rows.slice(1).map((r) => r.split(/\s+/).slice(0, 2))).toEqual([
        [second['key_id'], 'active'],
        [first!['key_id'], 'previous'],
      ]);

      // The active key cannot be retired (exit 1, the conflict named); the previous one can.
      const refused = await cli(['keys', 'retire', String(second['key_id'])]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('signing key');
      expect(refused.stderr).not.toMatch(/\n\s+at /);
      const retired = await cli(['keys', 'retire', String(first!['key_id'])]);
      expect(retired.code).toBe(0);
      expect(retired.stdout).toMatch(/status:\s+retired/);

      const all = await cli(['keys', 'list', '--all', '--json']);
      expect(json(all.stdout)['keys'].map((k: Json) => [k['key_id'], k['status']])).toEqual([
        [first!['key_id'], 'retired'],
        [second['key_id'], 'active'],
      ]);
      expect(json((await cli(['keys', 'list', '--json'], '')).stdout)['keys']).toHaveLength(1);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 8: tally keys generate writes a key file offline; rotate --key-id makes that key active',
    async () => {
      const generated = await runTally(['keys', 'generate', '--out', keyring, '--json'], {});
      expect(generated.code).toBe(0);
      const key = json(generated.stdout);
      expect(statSync(join(keyring, `${String(key['key_id'])}.pem`)).mode & 0o777).toBe(0o600);
      const rotated = await cli(['keys', 'rotate', '--key-id', String(key['key_id']), '--json']);
      expect(rotated.code).toBe(0);
      expect(json(rotated.stdout)).toMatchObject({
        key_id: key['key_id'],
        public_key: key['public_key'],
        status: 'active',
      });
      const unknown = await cli(['keys', 'rotate', '--key-id', 'ed25519-notinthering0']);
      expect(unknown.code).toBe(5);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 8: tally tenants create and list, and a tenant key created once, listed without its secret, deleted and refused',
    async () => {
      const id = `cli-${randomBytes(3).toString('hex')}`;
      const created = await cli(['tenants', 'create', id, '--display-name', 'CLI tenant', '--json']);
      expect(created.code).toBe(0);
      expect(json(created.stdout)).toMatchObject({ id, display_name: 'CLI tenant' });
      const again = await cli(['tenants', 'create', id]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('409');

      const listed = await cli(['tenants', 'list']);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(/^ID\s+DISPLAY_NAME\s+CREATED_AT$/m);
      expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+CLI tenant\\s+\\d{4}-`, 'm'));

      const key = await cli(['tenants', 'keys', 'create', id, '--role', 'issuer', '--json']);
      expect(key.code).toBe(0);
      const issuer = json(key.stdout);
      expect(issuer).toMatchObject({ tenant_id: id, role: 'issuer' });
      expect(String(issuer['key']).length).toBeGreaterThanOrEqual(32);

      // The issuer may not list tenants (exit 4); its tenant's key list never shows a secret.
      expect((await cli(['tenants', 'list'], String(issuer['key']))).code).toBe(4);
      const keys = await cli(['tenants', 'keys', 'list', id]);
      expect(keys.code).toBe(0);
      expect(keys.stdout).toMatch(new RegExp(`^${issuer['key_id']}\\s+issuer\\s+`, 'm'));
      expect(keys.stdout).not.toContain(String(issuer['key']));

      const deleted = await cli(['tenants', 'keys', 'delete', id, String(issuer['key_id'])]);
      expect(deleted.code).toBe(0);
      const after = await stack.http('GET', `/v1/tenants/${id}`, undefined, {
        authorization: `Bearer ${issuer['key']}`,
      });
      expect(after.status).toBe(401);
      expect((await cli(['tenants', 'keys', 'delete', id, 'nosuchkey'])).code).toBe(5);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 8: wrong usage exits 2, no credential 4, an unreachable authority 3',
    async () => {
      const bad = await cli(['tenants', 'keys', 'create', 'x', '--role', 'owner']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('owner');
      expect((await cli(['keys', 'rotate'], '')).code).toBe(4);
      const down = await runTally(['tenants', 'list'], { TALLY_AUTHORITY_URL: 'http://127.0.0.1:9', TALLY_KEY: 'x' });
      expect(down.code).toBe(3);
      expect(down.stderr).not.toMatch(/\n\s+at /);
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
