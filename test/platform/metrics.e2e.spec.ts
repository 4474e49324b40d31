// Proves issue 12 item 4 against a running stack (the budget-authority, a metered
// orchestrator and a scripted provider over HTTP): after traffic (a completed unit with a
// network failure then a success, a refused admission, a rejected HTTP body), both
// services' /metrics carry the operator series with their labels, the counts match the
// traffic, and no label holds an id or a secret.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { authorityCall, issueCapability, meteredHarness } from '../gateway/gateway.support.js';
import { workBody } from '../orchestrator/orchestrator.harness.js';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { dashboardExpressions, ruleExpressions, seriesOf } from './monitoring-files.js';

const h = meteredHarness('metrics');

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Parses the Prometheus text format: one sample per line, HELP/TYPE comments skipped. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

async function scrape(url: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parse(text) };
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

const series = (samples: Sample[], name: string) => samples.filter((s) => s.name === name);

let capability: { id: string; token: string };

describe('Issue 12: metrics operators alert on', () => {
  beforeAll(async () => {
    capability = await issueCapability(h, [
      { server_id: 'scripted', tool_name: 'ok-model', max_total_cost_units: 1_000_000 },
      { server_id: 'scripted', tool_name: 'flaky-model', max_total_cost_units: 1_000_000 },
    ]);
    // One unit: a network failure, then a streamed success (two attempts, two admissions, two settlements).
    h.provider().script('flaky-model', [
      { kind: 'reset' },
      { kind: 'stream', chunks: ['hel', 'lo'], usage: { input_tokens: 4, output_tokens: 2 } },
    ]);
    const ok = workBody({ token: capability.token, route: [{ provider: 'scripted', model: 'flaky-model' }] });
    expect((await h.post('/v1/work', ok)).status).toBe(202);
    expect(await h.terminal(ok['work_id'] as string)).toMatchObject({ status: 'completed' });
    // A model no grant names: the authority denies with no_matching_grant; nothing is dispatched.
    const refused = workBody({ token: capability.token, route: [{ provider: 'scripted', model: 'limited-model' }] });
    expect((await h.post('/v1/work', refused)).status).toBe(202);
    expect(await h.terminal(refused['work_id'] as string)).toMatchObject({ status: 'failed' });
    // A body the authority's validator rejects: a dead letter with reason validation_failed.
    const bad = await fetch(`${h.authority!.url}/v1/capabilities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_KEY}` },
      body: JSON.stringify({ grants: 'not-a-list' }),
    });
    expect(bad.status).toBe(400);
  }, 180_000);

  it('Issue 12: the authority exports admissions by verdict and reason, Admit latency, holds, exposure and committed cost by currency, ambiguities, expiry, resolutions, dead letters, projection lag and the webhook series', async () => {
    const { samples, text } = await h.eventually('the authority metrics after the traffic', async () => {
      const scraped = await scrape(h.authority!.metricsUrl);
      const committed = value(scraped.samples, 'tally_committed_cost_units', { currency: 'USD' });
      const dead = value(scraped.samples, 'tally_dead_letters_total', { reason: 'validation_failed' });
      const lag = series(scraped.samples, 'tally_projection_lag_events');
      return committed > 0 && dead >= 1 && lag.length > 0 && lag.every((s) => s.value === 0) ? scraped : undefined;
    });
    expect(value(samples, 'tally_admissions_total', { verdict: 'allow', reason: 'none' })).toBe(2);
    expect(value(samples, 'tally_admissions_total', { verdict: 'deny', reason: 'no_matching_grant' })).toBe(1);
    expect(value(samples, 'tally_admit_duration_seconds_count', { verdict: 'allow' })).toBe(2);
    expect(value(samples, 'tally_admit_duration_seconds_count', { verdict: 'deny' })).toBe(1);
    expect(series(samples, 'tally_admit_duration_seconds_bucket').some((s) => s.labels['le'] === '+Inf')).toBe(true);
    // The network failure keeps its hold (B5: it may have been billed); the success settles at usage.
    expect(value(samples, 'tally_settlements_total', { outcome: 'completed', verdict: 'allow' })).toBe(1);
    expect(value(samples, 'tally_settlements_total')).toBe(2);
    expect(value(samples, 'tally_holds_open', { currency: 'USD' })).toBe(0);
    // The network failure's hold is retained whole (B5), so its worst case stays exposed.
    expect(value(samples, 'tally_exposure_units', { currency: 'USD' })).toBeGreaterThan(0);
    expect(value(samples, 'tally_ambiguities_open')).toBe(0);
    expect(value(samples, 'tally_holds_settlement_overdue')).toBe(0);
    expect(series(samples, 'tally_ambiguity_oldest_age_seconds')).toHaveLength(1);
    expect(text).toContain('# TYPE tally_holds_expired_total counter');
    expect(text).toContain('# TYPE tally_reconciler_resolutions_total counter');
    expect(value(samples, 'tally_dead_letters_total', { source: 'http-budget-authority' })).toBe(1);
    const projections = series(samples, 'tally_projection_lag_events').map((s) => s.labels['projection']);
    expect(projections.length).toBeGreaterThan(0);
    expect(series(samples, 'tally_stream_messages').map((s) => s.labels['stream'])).toEqual(
      expect.arrayContaining([h.namespace.toUpperCase().replace(/-/g, '_') + '_DLQ']),
    );
    for (const name of [
      'tally_webhook_deliveries_total',
      'tally_webhook_delivery_failures_total',
      'tally_webhook_delivery_seconds',
      'tally_webhook_deliveries_pending',
    ])
      expect(text).toContain(`# HELP ${name} `);
    assertLowCardinality(samples, [capability.id, capability.token, TEST_ADMIN_KEY]);
  });

  it('Issue 12: the orchestrator exports dispatch attempts by domain and settlement, provider latency, time to first token, work-queue lag and projection lag', async () => {
    const { samples } = await h.eventually('the orchestrator metrics after the traffic', async () => {
      const scraped = await scrape(h.metricsUrl);
      const lag = series(scraped.samples, 'tally_projection_lag_events');
      return lag.length > 0 && lag.every((s) => s.value === 0) ? scraped : undefined;
    });
    const attempt = (domain: string, settlement: string) =>
      value(samples, 'tally_dispatch_attempts_total', { provider: 'scripted', domain, settlement });
    expect(attempt('network', 'unknown')).toBe(1);
    expect(attempt('unknown', 'ok')).toBe(1);
    expect(value(samples, 'tally_dispatch_attempts_total')).toBe(2);
    expect(value(samples, 'tally_provider_latency_seconds_count', { provider: 'scripted', settlement: 'ok' })).toBe(1);
    expect(value(samples, 'tally_provider_time_to_first_token_seconds_count', { provider: 'scripted' })).toBe(1);
    expect(value(samples, 'tally_work_queue_wait_seconds_count')).toBeGreaterThanOrEqual(2);
    expect(series(samples, 'tally_work_queue_pending_messages')).toHaveLength(1);
    expect(value(samples, 'tally_work_queue_pending_messages')).toBe(0);
    expect(series(samples, 'tally_work_queue_ack_pending_messages')).toHaveLength(1);
    expect(value(samples, 'tally_work_units_ended_total', { status: 'completed' })).toBe(1);
    expect(series(samples, 'tally_projection_lag_events').length).toBeGreaterThan(0);
    assertLowCardinality(samples, [capability.id, capability.token, TEST_ADMIN_KEY]);
  });

  it('Issue 12: the metrics follow the usage the authority reports (exposure and committed cost equal the root capability usage)', async () => {
    const usage = (await authorityCall(h, 'GET', `/v1/capabilities/${capability.id}/usage`))['grants'] as Record<
      string,
      unknown
    >[];
    const sum = (field: string) => usage.reduce((n, g) => n + Number(g[field] ?? 0), 0);
    const { samples } = await scrape(h.authority!.metricsUrl);
    expect(value(samples, 'tally_committed_cost_units', { currency: 'USD' })).toBe(sum('committed_cost_units'));
    expect(value(samples, 'tally_exposure_units', { currency: 'USD' })).toBe(sum('exposed_cost_units'));
  });

  it('Issue 12: every series the PrometheusRule and the Grafana dashboard read is one the services export', async () => {
    const declared = new Set<string>();
    for (const url of [h.authority!.metricsUrl, h.metricsUrl])
      for (const m of (await scrape(url)).text.matchAll(/^# TYPE (\S+) /gm)) declared.add(m[1]!);
    const read = new Set([...ruleExpressions(), ...dashboardExpressions()].flatMap(seriesOf));
    expect(read.size).toBeGreaterThan(15);
    expect([...read].filter((name) => !declared.has(name))).toEqual([]);
  });
});

/** No label value is an id, a credential or free text: each is a short name, and none of the given secrets appears. */
function assertLowCardinality(samples: Sample[], secrets: readonly string[]): void {
  for (const s of samples.filter((x) => x.name.startsWith('tally_'))) {
    for (const [key, v] of Object.entries(s.labels)) {
      expect(`${key}=${v}`).toMatch(/^[a-z_]+=[A-Za-z0-9_.:+-]{1,64}$/);
      for (const secret of secrets) expect(v).not.toContain(secret);
    }
  }
}
