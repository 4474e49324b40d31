// Proves the local stack command: it says what to install when nats-server is missing,
// starts its own nats-server when nothing answers, runs both services, and on Ctrl-C
// stops everything it started and nothing else.
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, sharedNatsUrl, uniqueNamespace } from '@tally/testing';

function runUp(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', './tools/register.mjs', 'apps/cli/src/main.ts', 'up'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

async function waitFor(probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('tally up', () => {
  it('without nats-server on PATH and nothing at NATS_URL, says exactly what to install and exits non-zero without a stack trace', async () => {
    const up = runUp({ PATH: '/bin', NATS_URL: `nats://127.0.0.1:${await freePort()}` });
    expect(await up.exited).toBe(1);
    expect(up.output()).toContain('sudo apt-get install nats-server');
    expect(up.output()).not.toMatch(/\n\s+at /);
  });

  it('starts its own nats-server, runs both services, prints their APIs, and Ctrl-C stops only what it started', async () => {
    const natsPort = await freePort();
    const namespace = uniqueNamespace('up');
    const dir = mkdtempSync(join(tmpdir(), 'tally-up-'));
    const [authorityPort, orchestratorPort] = [await freePort(), await freePort()];
    const [authorityMetricsPort, orchestratorMetricsPort] = [await freePort(), await freePort()];
    const up = runUp({
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      TALLY_NAMESPACE: namespace,
      TALLY_DATA_DIR: dir,
      TALLY_SQLITE_PATH: join(dir, 'tally.sqlite'),
      // Queues reserve their byte limit on the shared server; the ledger streams keep their default (no limit).
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      AUTHORITY_HTTP_PORT: String(authorityPort),
      ORCHESTRATOR_HTTP_PORT: String(orchestratorPort),
      AUTHORITY_METRICS_PORT: String(authorityMetricsPort),
      ORCHESTRATOR_METRICS_PORT: String(orchestratorMetricsPort),
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
    });
    await waitFor(() => up.output().includes('Press Ctrl-C to stop'), 120_000);
    expect(up.output()).toContain(`started nats-server with JetStream on nats://127.0.0.1:${natsPort}`);
    expect(up.output()).toContain(`http://127.0.0.1:${authorityPort}`);
    expect(up.output()).toContain(`http://127.0.0.1:${orchestratorPort}`);
    expect(up.output()).toContain(`http://127.0.0.1:${authorityMetricsPort}/metrics`);
    expect(up.output()).toContain(`http://127.0.0.1:${orchestratorMetricsPort}/metrics`);
    expect((await fetch(`http://127.0.0.1:${authorityPort}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${orchestratorPort}/readyz`)).status).toBe(200);
    // No TALLY_ADMIN_KEY: a local admin key was made under the data dir, 0600, and is never printed.
    const keyFile = join(dir, 'admin-key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const adminKey = readFileSync(keyFile, 'utf8').trim();
    expect(up.output()).toContain('admin key');
    expect(up.output()).not.toContain(adminKey);
    const tenants = `http://127.0.0.1:${authorityPort}/v1/tenants`;
    expect((await fetch(tenants)).status).toBe(401);
    expect((await fetch(tenants, { headers: { authorization: `Bearer ${adminKey}` } })).status).toBe(200);

    up.child.kill('SIGINT');
    expect(await up.exited).toBe(0);
    expect(await answers(natsPort)).toBe(false);
    expect(await answers(authorityPort)).toBe(false);
    expect(await answers(orchestratorPort)).toBe(false);
    // The shared server it did not start is untouched.
    expect(await answers(Number(new URL(sharedNatsUrl()).port || 4222))).toBe(true);
  });
});
