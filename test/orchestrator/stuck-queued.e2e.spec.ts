// Proves the stuck-queued sweeper against the running orchestrator: a unit whose
// WorkSubmitted was appended but never queued (a crash between the two) is re-published to
// the work queue after the grace period and runs to completion exactly once, with no client.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames } from '@tally/contracts';
import { WorkUnitRepository, WorkUnits, workEventRegistry } from '@tally/orchestrator-application';
import { connectNats, JetStreamEventStore } from '@tally/platform-jetstream';
import { sharedNatsUrl } from '@tally/testing';
import { OrchestratorHarness } from './orchestrator.harness.js';

const MODEL = 'fallback-model';
const h = new OrchestratorHarness({
  prefix: 'sweep',
  env: {
    TALLY__ORCHESTRATOR__QUEUED_SWEEP_INTERVAL_MS: '500',
    TALLY__ORCHESTRATOR__QUEUED_GRACE_MS: '6000',
    TALLY__ORCHESTRATOR__QUEUED_SWEEP_BATCH_MAX: '16',
  },
});
let nc: NatsConnection;
let units: WorkUnits;
beforeAll(async () => {
  await h.start(1);
  nc = await connectNats({
    url: sharedNatsUrl(),
    name: 'sweep-test',
    connectTimeoutMs: 5_000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  const names = tallyNames(h.namespace);
  const store = new JetStreamEventStore(jetstream(nc), await jetstreamManager(nc), {
    stream: names.workEventsStream,
    registry: workEventRegistry(),
    publishTimeoutMs: 5_000,
    loadEventsMax: 1_000,
    loadIdleTimeoutMs: 5_000,
  });
  units = new WorkUnits(
    new WorkUnitRepository(store, (id) => names.workEventSubject(id)),
    { nowMs: () => Date.now() },
    5,
  );
}, 180_000);
afterAll(async () => {
  await nc?.drain();
  await h.dispose();
}, 60_000);

describe('agent-orchestrator stuck-queued sweeper', () => {
  it('a unit recorded but never queued is re-queued after the grace period and completes with exactly one paid call', async () => {
    h.provider().always(MODEL, { kind: 'stream', chunks: ['recovered'], usage: { input_tokens: 5, output_tokens: 3 } });
    const workId = `stuck${Date.now().toString(36)}`;
    // Only the record: the queue message the crashed submission would have published never exists.
    const recorded = await units.submit({
      work_id: workId,
      session_id: workId,
      purpose: 'execute',
      token: 'capability-token',
      route: [{ provider: 'scripted', model: MODEL }],
      messages: [{ role: 'user', content: 'hello' }],
      limits: { max_tokens: 64, timeout_ms: 10_000 },
    });
    expect(recorded.ok).toBe(true);
    expect(h.calls(MODEL)).toBe(0);
    expect(await h.terminal(workId, 120_000)).toMatchObject({ status: 'completed', output: 'recovered' });
    expect(h.calls(MODEL)).toBe(1);
    const receipt = (await h.get(`/v1/work/${workId}/receipt`)).body;
    expect(receipt['attempts']).toHaveLength(1);
    expect(receipt['winning_attempt']).toBe(0);
  });
});
