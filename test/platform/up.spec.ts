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
import { natsServersOf, privateServerPort } from '../../apps/cli/src/up.command.js';

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

  it("Issue 23 item 8: NATS_URL is read by the services' parser: a server list, credentials in the URL and tls:// are taken, credentials are never shown, and a private server is started only for one plain local server", () => {
    const list = natsServersOf('nats://ops:s3cret@10.0.0.1:4222, tls://nats-b.internal:4443,nats://[::1]:4225');
    if ('problem' in list) throw new Error(list.problem);
    expect(list.servers).toEqual(['nats://10.0.0.1:4222', 'tls://nats-b.internal:4443', 'nats://[::1]:4225']);
    expect(list.endpoints.map((e) => `${e.scheme} ${e.host} ${e.port}`)).toEqual([
      'nats 10.0.0.1 4222',
      'tls nats-b.internal 4443',
      'nats ::1 4225',
    ]);
    expect(privateServerPort(list)).toBeUndefined();
    const local = natsServersOf('nats://127.0.0.1:4333');
    const tls = natsServersOf('tls://127.0.0.1:4333');
    if ('problem' in local || 'problem' in tls) throw new Error('parse');
    expect(privateServerPort(local)).toBe(4333);
    expect(privateServerPort(tls)).toBeUndefined();
    expect(natsServersOf('http://127.0.0.1:4222')).toHaveProperty('problem');
  });

  it('Issue 23 item 8: a NATS_URL list where nothing answers is named without its credentials, and no server is started; a malformed one exits 2 naming the setting', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const up = runUp({ NATS_URL: `nats://ops:s3cret@127.0.0.1:${a},nats://127.0.0.1:${b}` });
    expect(await up.exited).toBe(1);
    expect(up.output()).toContain(`no NATS server answers at nats://127.0.0.1:${a}, nats://127.0.0.1:${b}`);
    expect(up.output()).not.toContain('s3cret');
    expect(up.output()).not.toMatch(/\n\s+at /);
    expect(await answers(a)).toBe(false);
    const bad = runUp({ NATS_URL: 'http://127.0.0.1:4222' });
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain('tally up: NATS_URL: each server must look like nats://host:port');
  });

  it('Issue 23 item 8: with a server list whose first server is down and which carries credentials, both services come up on the server that answers', async () => {
    const dead = await freePort();
    const shared = new URL(sharedNatsUrl());
    const namespace = uniqueNamespace('uplist');
    const dir = mkdtempSync(join(tmpdir(), 'tally-up-'));
    const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
    const up = runUp({
      NATS_URL: `nats://ops:s3cret@127.0.0.1:${dead},nats://ops:s3cret@${shared.hostname}:${shared.port || 4222}`,
      TALLY_NAMESPACE: namespace,
      TALLY_DATA_DIR: dir,
      TALLY_SQLITE_PATH: join(dir, 'tally.sqlite'),
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      AUTHORITY_HTTP_PORT: String(ports[0]),
      ORCHESTRATOR_HTTP_PORT: String(ports[1]),
      AUTHORITY_METRICS_PORT: String(ports[2]),
      ORCHESTRATOR_METRICS_PORT: String(ports[3]),
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
    });
    try {
      await waitFor(() => up.output().includes('Press Ctrl-C to stop'), 120_000);
      expect(up.output()).toContain(`using the NATS server at nats://127.0.0.1:${dead}, nats://`);
      expect(up.output()).not.toContain('s3cret');
      expect((await fetch(`http://127.0.0.1:${ports[0]}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${ports[1]}/readyz`)).status).toBe(200);
      expect(await answers(dead)).toBe(false);
    } finally {
      up.child.kill('SIGINT');
      await up.exited;
    }
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
