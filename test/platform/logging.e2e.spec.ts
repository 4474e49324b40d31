// Proves a running service logs through pino (nestjs-pino) in the JSON shape operators rely on,
// with one line per HTTP request, and that no credential it is handed (bearer keys, x-api-key,
// tokens and keys in query strings, body secrets) ever reaches a log line.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteNamespaceStreams, ServiceProcess, sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import { TEST_ADMIN_KEY } from '../support/auth.js';

const dir = mkdtempSync(join(tmpdir(), 'tally-logging-'));
const namespace = uniqueNamespace('logs');
let svc: ServiceProcess;

beforeAll(async () => {
  svc = await ServiceProcess.start({
    service: 'budget-authority',
    env: {
      NATS_URL: sharedNatsUrl(),
      TALLY_NAMESPACE: namespace,
      TALLY_SQLITE_PATH: join(dir, 'projections.sqlite'),
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      DATABASE_URL: '',
      TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
      LOG_LEVEL: 'debug',
    },
  });
}, 120_000);
afterAll(async () => {
  await svc?.stop();
  await deleteNamespaceStreams(sharedNatsUrl(), namespace);
  rmSync(dir, { recursive: true, force: true });
});

type Line = Record<string, unknown>;

function jsonLines(output: string): Line[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

async function eventuallyLogged(predicate: (line: Line) => boolean): Promise<Line> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const hit = jsonLines(svc.logs()).find(predicate);
    if (hit) return hit;
    if (Date.now() > deadline) throw new Error('no such log line');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('service logs', () => {
  it('issue 12 item 6: every line is JSON with time, level, service and msg; requests are logged without credentials', async () => {
    const capability = 'c1.eyJpZCI6ImZha2UifQ.bm90LWEtc2lnbmF0dXJl';
    const operatorKey = `tally_key_0123456789abcdef_${'Z'.repeat(43)}`;
    const listed = await fetch(`${svc.url}/v1/tenants`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    expect(listed.status).toBe(200);
    const refused = await fetch(`${svc.url}/v1/receipts?request_id=r1`, { headers: { 'x-api-key': capability } });
    expect(refused.status).toBe(401);
    const unknownKey = await fetch(`${svc.url}/v1/tenants/default`, {
      headers: { authorization: `Bearer ${operatorKey}` },
    });
    expect(unknownKey.status).toBe(401);
    expect((await fetch(`${svc.url}/v1/keys?token=query-secret-1&api_key=query-secret-2`)).status).toBe(200);
    const bad = await fetch(`${svc.url}/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'NOT VALID', password: 'body-secret-3' }),
    });
    expect(bad.status).toBe(400);

    const keysLine = await eventuallyLogged((l) =>
      String((l['req'] as Line | undefined)?.['url']).startsWith('/v1/keys'),
    );
    expect(keysLine).toMatchObject({ level: 'debug', service: 'budget-authority', res: { status: 200 } });
    expect((keysLine['req'] as Line)['url']).toBe('/v1/keys?token=[redacted]&api_key=[redacted]');
    const refusedLine = await eventuallyLogged((l) =>
      String((l['req'] as Line | undefined)?.['url']).startsWith('/v1/receipts'),
    );
    expect(refusedLine).toMatchObject({ level: 'info', res: { status: 401 } });

    const output = svc.logs();
    const lines = jsonLines(output);
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      expect(new Date(String(line['time'])).toISOString()).toBe(line['time']);
      expect(['debug', 'info', 'warn', 'error']).toContain(line['level']);
      expect(line['service']).toBe('budget-authority');
      expect(typeof line['msg']).toBe('string');
    }
    for (const secret of [TEST_ADMIN_KEY, capability, operatorKey, 'query-secret-1', 'query-secret-2', 'body-secret-3'])
      expect(output).not.toContain(secret);
  });
});
