// Proves issue 9 item 3 for a running service: with its NATS password inside NATS_URL it logs in (main thread and
// projection thread), and the password shows up nowhere: not in /readyz, /metrics, its logs, or a refused boot.
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrivateNatsServer, ServiceProcess, uniqueNamespace } from '@tally/testing';

const SECRET = `s3cret-${randomBytes(6).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'tally-secrets-'));
let server: PrivateNatsServer | undefined;
const running: ServiceProcess[] = [];
afterAll(async () => {
  for (const svc of running) await svc.stop();
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('NATS credentials stay secret', () => {
  it('issue 9 item 3: a service logs in with nats://user:pass@host and never shows the password', async () => {
    server = await PrivateNatsServer.start({
      config: `authorization { users: [ { user: svc, password: "${SECRET}" } ] }\n`,
    });
    const env = (password: string) => ({
      NATS_URL: `nats://svc:${password}@127.0.0.1:${server!.port}`,
      TALLY_NAMESPACE: uniqueNamespace('sec'),
      DATABASE_URL: '',
      TALLY_SQLITE_PATH: join(dir, 'authority.sqlite'),
      TALLY_SIGNING_KEY: randomBytes(32).toString('base64url'),
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      LOG_LEVEL: 'debug',
    });
    const svc = await ServiceProcess.start({ service: 'budget-authority', env: env(SECRET), readyTimeoutMs: 120_000 });
    running.push(svc);
    const ready = await (await fetch(`${svc.metricsUrl}/readyz`)).text();
    const checks = (JSON.parse(ready) as { checks: Record<string, { ok: boolean; details: Record<string, unknown> }> })
      .checks;
    expect(checks['nats']!.details['servers']).toEqual([`nats://127.0.0.1:${server.port}`]);
    expect(checks['nats']!.details['login']).toBe('user');
    // The projection thread has its own connection: it is up only if it logged in too.
    expect(checks['projections']!.ok).toBe(true);
    const metrics = await (await fetch(`${svc.metricsUrl}/metrics`)).text();
    for (const text of [ready, metrics, svc.logs()]) expect(text).not.toContain(SECRET);

    const refused = await ServiceProcess.start({
      service: 'budget-authority',
      env: { ...env(`wrong-${SECRET}`), TALLY__NATS__CONNECT_TIMEOUT_MS: '2000' },
      waitReady: false,
    });
    expect(await refused.waitExit(60_000)).toBe(69);
    expect(refused.logs()).toMatch(/NATS at nats:\/\/127\.0\.0\.1:\d+ is not available/);
    expect(refused.logs()).not.toContain(SECRET);
  }, 180_000);
});
