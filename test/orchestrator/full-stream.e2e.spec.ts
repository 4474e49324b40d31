// Proves issue 9 item 1 end to end: a full work event stream refuses new work with a 507 stream_full problem, never
// drops an event, and /readyz and /metrics report how full it is (degraded past the configured share).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { tallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { sharedNatsUrl } from '@tally/testing';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const STREAM_BYTES = 1024 * 1024;
const h = new OrchestratorHarness({
  prefix: 'ofull',
  // No dispatch: only the submissions write, so the test knows exactly what the stream must hold.
  env: { TALLY__STREAMS__MAX_BYTES: String(STREAM_BYTES), TALLY__ORCHESTRATOR__RUN_WORKERS: 'false' },
});
beforeAll(async () => {
  await h.start(1);
}, 180_000);
afterAll(async () => h.dispose(), 60_000);

describe('a full ledger stream', () => {
  it('issue 9 item 1: submissions past the byte limit get 507 stream_full, every accepted unit stays, and readiness says degraded', async () => {
    const big = 'x'.repeat(150_000);
    const accepted: string[] = [];
    let refused: { status: number; body: Record<string, unknown> } | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const body = workBody({ messages: [{ role: 'user', content: big }] });
      const res = await h.post('/v1/work', body);
      if (res.status === 202 || res.status === 200) accepted.push(body['work_id'] as string);
      else refused = res;
    }
    expect(refused?.status).toBe(507);
    expect(refused?.body).toMatchObject({ type: 'stream_full', status: 507 });
    expect(String(refused?.body['detail'])).toMatch(/WORK_EVENTS is full.*nothing was stored/);
    expect(accepted.length).toBeGreaterThanOrEqual(5);

    for (const id of accepted) expect((await h.get(`/v1/work/${id}`)).status).toBe(200);
    const names = tallyNames(h.namespace);
    const nc = await connectNats({
      url: sharedNatsUrl(),
      name: 'ofull-test',
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: 0,
      reconnectTimeWaitMs: 100,
    });
    try {
      const { state, config } = await (await jetstreamManager(nc)).streams.info(names.workEventsStream);
      expect(config.max_bytes).toBe(STREAM_BYTES);
      expect(state.first_seq).toBe(1);
      expect(state.messages).toBe(accepted.length);
    } finally {
      await nc.close();
    }

    // Readiness reads the streams at most once a second, so the report may trail the last write by that much.
    const readiness = await h.eventually('readiness to turn degraded', async () => {
      const res = await fetch(`${h.metricsUrl}/readyz`);
      const body = (await res.json()) as { status: string; degraded: string[] };
      return res.status === 200 && body.status === 'degraded' ? body : undefined;
    });
    expect(readiness.degraded).toEqual([
      expect.stringMatching(new RegExp(`stream ${names.workEventsStream} is \\d+% full`)),
    ]);
    const metrics = await (await fetch(`${h.metricsUrl}/metrics`)).text();
    const ratio = new RegExp(`tally_stream_fullness_ratio\\{stream="${names.workEventsStream}"\\} ([0-9.]+)`).exec(
      metrics,
    );
    expect(Number(ratio?.[1])).toBeGreaterThan(0.8);
    expect(metrics).toContain(`tally_stream_max_bytes{stream="${names.workEventsStream}"} ${STREAM_BYTES}`);
  });
});
