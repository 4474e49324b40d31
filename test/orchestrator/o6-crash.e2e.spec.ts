// Proves O6 with real processes: three orchestrator replicas share one durable consumer;
// the replica whose dispatch is in flight is SIGKILLed; another replica gets the unit,
// settles the cut-off attempt unknown (it counts against the ceiling) and finishes or
// fails closed, and the providers never see more paid calls than the ceiling allows.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

// Short ack wait so a killed worker's unit comes back quickly; in-progress acks keep live ones.
const h = new OrchestratorHarness({
  prefix: 'o6',
  providerPerProcess: true,
  env: { TALLY__CONSUMERS__ACK_WAIT_MS: '3000', TALLY__CONSUMERS__WORKING_INTERVAL_MS: '500' },
});
beforeAll(async () => {
  await h.start(3);
}, 300_000);
afterAll(() => h.dispose(), 60_000);

type Attempt = Record<string, unknown>;

/** Every provider hangs on `model`; returns the index of the replica whose provider got the call. */
async function killTheDispatcher(model: string, workId: string): Promise<number> {
  const holder = await h.eventually(`a replica to dispatch ${workId}`, async () => {
    const index = h.providers.findIndex((p) => p.calls(model) > 0);
    return index >= 0 ? index : undefined;
  });
  await h.processes[holder]!.stop('SIGKILL');
  return holder;
}

describe('agent-orchestrator O6 dispatch workers scale out and survive a crash', () => {
  it('O6 three replicas share one durable consumer: 30 units all complete, each dispatched exactly once, by more than one replica', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const body = workBody({ route: [{ provider: 'scripted', model: 'ok-model' }] });
      ids.push(body['work_id'] as string);
      expect((await h.post('/v1/work', body, h.processes[i % 3]!.url)).status).toBe(202);
    }
    for (const id of ids) expect((await h.terminal(id))['status']).toBe('completed');
    expect(h.calls('ok-model')).toBe(30);
    expect(h.providers.filter((p) => p.calls('ok-model') > 0).length).toBeGreaterThan(1);
  });

  it('O6 a call longer than the ack wait is kept by its worker with in-progress acks: one paid call, no redelivery to another replica', async () => {
    for (const p of h.providers)
      p.always('fallback-model', { kind: 'stream', chunks: ['slow but single'], latencyMs: 7_000 });
    const body = workBody({
      route: [{ provider: 'scripted', model: 'fallback-model' }],
      limits: { max_tokens: 64, timeout_ms: 60_000 },
    });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({
      status: 'completed',
      output: 'slow but single',
    });
    expect(h.calls('fallback-model')).toBe(1);
    expect(((await h.get(`/v1/work/${body['work_id']}/receipt`)).body['attempts'] as unknown[]).length).toBe(1);
  });

  it('O6 SIGKILL of the replica mid-dispatch: another replica finishes the unit, the cut-off attempt is unknown, and paid calls stay within the ceiling', async () => {
    for (const p of h.providers) p.always('hang-model', { kind: 'hang' });
    const body = workBody({
      route: [{ provider: 'scripted', model: 'hang-model' }],
      limits: { max_retries: 2, run_retry_attempts: 0, dispatch_ceiling: 3, max_tokens: 64, timeout_ms: 120_000 },
    });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const killed = await killTheDispatcher('hang-model', body['work_id'] as string);
    // The survivors answer now; the killed replica's provider is left hanging.
    h.providers.forEach((p, i) => i !== killed && p.always('hang-model', { kind: 'stream', chunks: ['survived'] }));
    const status = await h.terminal(body['work_id'] as string, 180_000);
    expect(status).toMatchObject({ status: 'completed', output: 'survived' });
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    const attempts = receipt['attempts'] as Attempt[];
    expect(attempts[0]).toMatchObject({ ordinal: 0, reason: 'initial', domain: 'unknown', settlement: 'unknown' });
    expect(String(attempts[0]!['error'])).toContain('never settled');
    expect(attempts.at(-1)).toMatchObject({ settlement: 'ok' });
    expect(receipt['winning_attempt']).toBe(attempts.length - 1);
    expect(attempts.length).toBeLessThanOrEqual(3);
    expect(h.calls('hang-model')).toBe(attempts.length);
    expect(h.providers[killed]!.calls('hang-model')).toBe(1);
  });

  it('O6 with ceiling 1 the cut-off attempt uses up the ceiling: the unit fails closed and no second paid call is made', async () => {
    const model = 'slow-model';
    for (const p of h.providers) p.always(model, { kind: 'hang' });
    const alive = h.processes.findIndex((p) => p.exited === null);
    const body = workBody({
      route: [{ provider: 'scripted', model }],
      limits: { max_retries: 0, run_retry_attempts: 0, dispatch_ceiling: 1, max_tokens: 64, timeout_ms: 120_000 },
    });
    expect((await h.post('/v1/work', body, h.processes[alive]!.url)).status).toBe(202);
    const killed = await killTheDispatcher(model, body['work_id'] as string);
    h.providers.forEach((p, i) => i !== killed && p.always(model, { kind: 'stream', chunks: ['must not happen'] }));
    const status = await h.terminal(body['work_id'] as string, 180_000);
    expect(status['status']).toBe('failed');
    expect(status['error']).toContain('dispatch ceiling of 1');
    const attempts = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body['attempts'] as Attempt[];
    expect(attempts).toEqual([expect.objectContaining({ ordinal: 0, settlement: 'unknown' })]);
    expect(h.calls(model)).toBe(1);
  });
});
