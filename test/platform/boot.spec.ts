// Proves both services boot on validated config with health, readiness (including the
// durability report), metrics and OpenAPI, and that bad config (a price past its range too)
// stops boot with a clear message.
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  deleteNamespaceStreams,
  ServiceProcess,
  sharedNatsUrl,
  uniqueNamespace,
  type ServiceName,
} from '@tally/testing';

const dir = mkdtempSync(join(tmpdir(), 'tally-boot-'));
const running: ServiceProcess[] = [];
const namespaces: string[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  for (const ns of namespaces) await deleteNamespaceStreams(sharedNatsUrl(), ns);
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  const namespace = uniqueNamespace('boot');
  namespaces.push(namespace);
  return {
    NATS_URL: sharedNatsUrl(),
    TALLY_NAMESPACE: namespace,
    TALLY_SQLITE_PATH: join(dir, `${namespace}.sqlite`),
    // Queues reserve their byte limit on the shared server; the ledger streams keep their default (no limit).
    TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
    TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
    DATABASE_URL: '',
    ...extra,
  };
}

describe.each<ServiceName>(['budget-authority', 'agent-orchestrator'])('%s boot', (service) => {
  it('bad config stops boot with exit code 78 and a message naming the setting, without a stack trace', async () => {
    const bad = await ServiceProcess.start({
      service,
      env: env({ NATS_URL: 'http://not-nats', LOG_LEVEL: 'chatty' }),
      waitReady: false,
    });
    expect(await bad.waitExit(60_000)).toBe(78);
    const output = bad.logs();
    expect(output).toContain('Invalid Tally configuration');
    expect(output).toMatch(/nats\.url: url must look like nats:\/\/host:port \(from NATS_URL\)/);
    expect(output).toMatch(/log_level: .* \(from LOG_LEVEL\)/);
    expect(output).not.toMatch(/\n\s+at .*\.(ts|js):\d+/);
  });

  it('ADR 0044 a provider or tool price past its range stops boot with exit code 78, naming the setting', async () => {
    const file = join(dir, `prices-${service}.json`);
    const price = { input_per_mtok_units: 1e20, output_per_mtok_units: 9007199254740993, currency: 'USD' };
    const tools = { search: { cost_units_per_call: 1_000_000_000_001, currency: 'USD' } };
    writeFileSync(
      file,
      JSON.stringify({
        providers: [
          {
            name: 'p1',
            kind: 'openai',
            base_url: 'http://127.0.0.1:9',
            api_key_env: 'P1_KEY',
            models: { 'gpt-x': price },
          },
        ],
        tool_servers: [{ name: 't1', url: 'http://127.0.0.1:9/mcp', tools }],
      }),
    );
    const bad = await ServiceProcess.start({ service, env: env({ TALLY_CONFIG: file }), waitReady: false });
    expect(await bad.waitExit(60_000)).toBe(78);
    const output = bad.logs();
    expect(output).toMatch(
      /providers\.0\.models\.gpt-x\.input_per_mtok_units: .*must not be greater than 1000000000000/,
    );
    expect(output).toMatch(/providers\.0\.models\.gpt-x\.output_per_mtok_units: /);
    expect(output).toMatch(/tool_servers\.0\.tools\.search\.cost_units_per_call: /);
  });

  it('an unreachable NATS stops boot with exit code 69 and says what to start', async () => {
    const down = await ServiceProcess.start({
      service,
      env: env({ NATS_URL: 'nats://127.0.0.1:9', TALLY__NATS__CONNECT_TIMEOUT_MS: '500' }),
      waitReady: false,
    });
    expect(await down.waitExit(60_000)).toBe(69);
    expect(down.logs()).toMatch(
      /NATS at nats:\/\/127\.0\.0\.1:9 is not available\. Start a nats-server with JetStream/,
    );
  });

  it('serves /healthz, /readyz with the durability report, /metrics and /openapi.json', async () => {
    const svc = await ServiceProcess.start({ service, env: env() });
    running.push(svc);
    expect(await (await fetch(`${svc.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = (await (await fetch(`${svc.metricsUrl}/readyz`)).json()) as {
      status: string;
      checks: Record<string, { ok: boolean; details: Record<string, unknown> }>;
    };
    expect(ready.status).toBe('ready');
    expect(ready.checks['database']!.ok).toBe(true);
    const durability = ready.checks['nats']!.details['durability'] as {
      server_version: string;
      acks_backed_by_fsync: boolean;
      streams: { replicas: number }[];
    };
    expect(durability.server_version).toMatch(/^\d+\.\d+\.\d+/);
    expect(typeof durability.acks_backed_by_fsync).toBe('boolean');
    expect(durability.streams.length).toBeGreaterThanOrEqual(5);
    const metrics = await (await fetch(`${svc.metricsUrl}/metrics`)).text();
    expect(metrics).toContain('process_cpu_user_seconds_total');
    const openapi = (await (await fetch(`${svc.url}/openapi.json`)).json()) as { openapi: string };
    expect(openapi.openapi).toMatch(/^3\./);
  });
});

describe('concurrent boot', () => {
  it('two replicas of each service starting at once on one fresh database all boot: migrations take turns', async () => {
    const shared = env();
    const services = await Promise.all(
      (['budget-authority', 'budget-authority', 'agent-orchestrator', 'agent-orchestrator'] as const).map(
        (service, i) => ServiceProcess.start({ service, env: { ...shared, LOG_LEVEL: i === 0 ? 'warn' : 'error' } }),
      ),
    );
    running.push(...services);
    for (const svc of services) expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
  });
});
