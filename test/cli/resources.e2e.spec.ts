// Issue 23 item 6 against a running stack (the budget-authority, a metered orchestrator, a
// scripted provider over HTTP): `tally capabilities issue|show|usage|delegate|revoke`,
// `tally work submit|show|abort`, `tally webhooks add|list|deliveries` and `tally usage`, as
// JSON and as text, values checked before anything is sent (exit 2, the flag named).
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { meteredHarness } from '../gateway/gateway.support.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { runTally } from './support/run-cli.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const h = meteredHarness('rescli');
/** Each CLI run is its own process: seconds each on a loaded 2-core machine. */
const CLI_TEST_TIMEOUT_MS = 300_000;

const cli = (args: string[], key: string = TEST_ADMIN_KEY) =>
  runTally(args, { TALLY_AUTHORITY_URL: h.authority!.url, TALLY_ORCHESTRATOR_URL: h.url, TALLY_KEY: key }, 120_000);
const subjectKey = () => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
const ok = (run: { code: number | null; stderr: string }) =>
  expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ code: 0, stderr: '' });

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
}, 300_000);
afterAll(() => h.dispose(), 60_000);

describe('Issue 23 item 6: a CLI command for every resource', () => {
  it(
    'Issue 23: tally capabilities issue -> show -> usage -> delegate -> revoke, and a bad amount is refused naming its flag (exit 2)',
    async () => {
      const grant =
        'scripted/ok-model,max_invocations=10,max_cost_per_invocation=100000,max_total_cost_units=500000,currency=USD';
      const issued = await cli([
        '--json',
        'capabilities',
        'issue',
        '--subject-key',
        subjectKey(),
        '--ttl',
        '3600',
        '--grant',
        grant,
      ]);
      ok(issued);
      const root = JSON.parse(issued.stdout) as Json;
      expect(root['grants'][0]).toMatchObject({
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_total_cost_units: 500000,
      });
      expect(String(root['token']).length).toBeGreaterThan(20);

      const shown = await cli(['capabilities', 'show', root['id']]);
      ok(shown);
      expect(shown.stdout).toMatch(new RegExp(`^id:\\s+${root['id']}$`, 'm'));
      expect(shown.stdout).toMatch(/^revoked:\s+no$/m);
      expect(shown.stdout).toMatch(/^\s*0\s+scripted\/ok-model\s+10\s+100000\s+500000\s+USD$/m);

      const usage = await cli(['--json', 'capabilities', 'usage', root['id']]);
      ok(usage);
      expect(JSON.parse(usage.stdout)['grants'][0]).toMatchObject({ grant_index: 0, invocation_count: 0 });
      expect((await cli(['capabilities', 'usage', root['id']])).stdout).toMatch(/^GRANT\s+INVOCATIONS\s+EXPOSED/m);

      const child = await cli([
        '--json',
        'capabilities',
        'delegate',
        root['id'],
        '--subject-key',
        subjectKey(),
        '--ttl',
        '600',
        '--grant',
        'scripted/ok-model,max_invocations=5,max_cost_per_invocation=1000,max_total_cost_units=1000,currency=USD',
        '--budget-share',
        '1000',
      ]);
      ok(child);
      const delegated = JSON.parse(child.stdout) as Json;
      const childShown = JSON.parse((await cli(['--json', 'capabilities', 'show', delegated['id']])).stdout) as Json;
      expect(childShown).toMatchObject({ parent_id: root['id'], root_id: root['id'], revoked: false });

      // Revoking the root revokes what was delegated from it.
      const revoked = await cli(['capabilities', 'revoke', root['id']]);
      ok(revoked);
      expect(revoked.stdout).toBe(`revoked ${root['id']}\n`);
      expect(JSON.parse((await cli(['--json', 'capabilities', 'show', delegated['id']])).stdout)).toMatchObject({
        revoked: true,
      });

      const tooBig = await cli([
        'capabilities',
        'issue',
        '--subject-key',
        subjectKey(),
        '--grant',
        'scripted/ok-model,max_total_cost_units=9223372036854775808',
      ]);
      expect(tooBig.code).toBe(2);
      expect(tooBig.stderr).toContain('--grant max_total_cost_units');
      const negative = await cli([
        'capabilities',
        'delegate',
        root['id'],
        '--subject-key',
        subjectKey(),
        '--grant',
        'scripted/ok-model',
        '--budget-share',
        '-1',
      ]);
      expect(negative.code).toBe(2);
      expect(negative.stderr).toContain('--budget-share');
      expect((await cli(['capabilities', 'show', 'no-such-capability'])).code).toBe(5);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 23: tally work submit -> show -> abort with the capability token, and tally usage shows the spend',
    async () => {
      const grant = 'scripted/hang-model,max_invocations=10,max_cost_per_invocation=100000,currency=USD';
      const cap = JSON.parse(
        (await cli(['--json', 'capabilities', 'issue', '--subject-key', subjectKey(), '--grant', grant])).stdout,
      ) as Json;
      h.provider().script('hang-model', [{ kind: 'hang' }]);
      const submitted = await cli(
        ['--json', 'work', 'submit', '--route', 'scripted/hang-model', '--prompt', 'wait for me'],
        cap['token'],
      );
      ok(submitted);
      const { work_id: id, status } = JSON.parse(submitted.stdout) as Json;
      expect(status).toBe('queued');

      const shown = await cli(['work', 'show', id], cap['token']);
      ok(shown);
      expect(shown.stdout).toMatch(new RegExp(`^work_id:\\s+${id}$`, 'm'));
      expect(shown.stdout).toMatch(/^status:\s+(queued|running)$/m);

      const aborted = await cli(['--json', 'work', 'abort', id], cap['token']);
      ok(aborted);
      expect(JSON.parse(aborted.stdout)).toEqual({ work_id: id, abort: 'requested' });
      expect(await h.terminal(id)).toMatchObject({ status: 'aborted' });
      expect(JSON.parse((await cli(['--json', 'work', 'show', id], cap['token'])).stdout)).toMatchObject({
        status: 'aborted',
      });

      const badRoute = await cli(['work', 'submit', '--route', 'no-slash', '--prompt', 'x'], cap['token']);
      expect(badRoute.code).toBe(2);
      expect(badRoute.stderr).toContain('--route');

      const usage = await cli(['--json', 'usage', '--bucket', 'day']);
      ok(usage);
      expect(JSON.parse(usage.stdout)).toMatchObject({ bucket: 'day', truncated: false });
      expect((await cli(['usage', '--since', 'yesterday'])).code).toBe(2);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 23 / ADR 0011: tally work submit --sign-with signs the request, so a token bound to its subject key is admitted; unsigned it is refused (exit 4)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tally-subject-'));
      try {
        const pair = generateKeyPairSync('ed25519');
        const pem = join(dir, 'subject.pem');
        writeFileSync(pem, pair.privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
        const x = pair.publicKey.export({ format: 'jwk' }).x!;
        const grant = 'scripted/ok-model,max_invocations=10,max_cost_per_invocation=100000,currency=USD';
        const issued = await cli(['--json', 'capabilities', 'issue', '--bind', '--subject-key', x, '--grant', grant]);
        ok(issued);
        const token = (JSON.parse(issued.stdout) as Json)['token'] as string;
        const submit = ['--json', 'work', 'submit', '--route', 'scripted/ok-model', '--prompt', 'signed'];
        const unsigned = await cli(submit, token);
        expect(unsigned.code).toBe(4);
        expect(unsigned.stderr).toContain('401');
        const signed = await cli([...submit, '--sign-with', pem], token);
        ok(signed);
        const id = (JSON.parse(signed.stdout) as Json)['work_id'] as string;
        expect(await h.terminal(id)).toMatchObject({ status: 'completed' });
        expect(signed.stdout + signed.stderr).not.toContain('PRIVATE KEY');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'Issue 23: tally webhooks add -> list -> deliveries, the secret shown once and never listed',
    async () => {
      const added = await cli([
        '--json',
        'webhooks',
        'add',
        'default',
        '--url',
        'https://hooks.example.com/tally',
        '--events',
        'budget.exhausted,capability.revoked',
      ]);
      ok(added);
      const hook = JSON.parse(added.stdout) as Json;
      expect(hook).toMatchObject({
        url: 'https://hooks.example.com/tally',
        events: ['budget.exhausted', 'capability.revoked'],
      });
      expect(String(hook['secret']).length).toBeGreaterThan(16);

      const listed = await cli(['webhooks', 'list', 'default']);
      ok(listed);
      expect(listed.stdout).toMatch(/^ID\s+URL\s+EVENTS\s+CREATED_AT$/m);
      expect(listed.stdout).toMatch(
        new RegExp(`^${hook['id']}\\s+https://hooks.example.com/tally\\s+budget.exhausted,capability.revoked`, 'm'),
      );
      expect(listed.stdout).not.toContain(hook['secret']);

      const deliveries = await cli(['--json', 'webhooks', 'deliveries', 'default', '--limit', '10']);
      ok(deliveries);
      expect(Array.isArray(JSON.parse(deliveries.stdout)['attempts'])).toBe(true);
      const badEvent = await cli([
        'webhooks',
        'add',
        'default',
        '--url',
        'https://hooks.example.com/x',
        '--events',
        'budget.nope',
      ]);
      expect(badEvent.code).toBe(2);
      expect(badEvent.stderr).toContain('--events');
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
