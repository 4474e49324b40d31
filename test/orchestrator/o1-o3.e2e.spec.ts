// Proves O1–O3 end to end: the orchestrator process dispatches to the scripted provider over
// real HTTP, writes one receipt per unit, fails closed at the ceiling and keeps partial output on abort.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'o13' });
beforeAll(async () => {
  await h.start(1);
}, 180_000);
afterAll(() => h.dispose(), 60_000);

describe('agent-orchestrator O1–O3 over HTTP', () => {
  it('O1 a network failure then success completes with two messages and one execute receipt (initial/network/unknown, retry/ok, winning 1, provider usage)', async () => {
    h.provider().script('flaky-model', [
      { kind: 'reset' },
      { kind: 'stream', chunks: ['do', 'ne'], usage: { input_tokens: 5, output_tokens: 3 } },
    ]);
    const body = workBody({ route: [{ provider: 'scripted', model: 'flaky-model' }] });
    const submitted = await h.post('/v1/work', body);
    expect(submitted).toEqual({ status: 202, body: { work_id: body['work_id'], status: 'queued' } });
    const status = await h.terminal(body['work_id'] as string);
    expect(status).toMatchObject({ status: 'completed', output: 'done' });
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    expect(receipt).toMatchObject({
      work_id: body['work_id'],
      purpose: 'execute',
      provider: 'scripted',
      model: 'flaky-model',
      winning_attempt: 1,
      metered: false,
    });
    const attempts = receipt['attempts'] as Record<string, unknown>[];
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({ ordinal: 0, reason: 'initial', domain: 'network', settlement: 'unknown' });
    expect(attempts[1]).toMatchObject({
      ordinal: 1,
      reason: 'retry',
      settlement: 'ok',
      usage: { input_tokens: 5, output_tokens: 3 },
    });
    await h.sessionLog(body['session_id'] as string, body['work_id'] as string);
    const messages = (await h.get(`/v1/sessions/${body['session_id']}/messages`)).body;
    expect(messages).toEqual({
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'done' },
      ],
    });
  });

  it('O2 an always-rate-limited provider with ceiling 2 fails closed: 2 account/failed attempts, no winner, "dispatch ceiling of 2", no paid call past it', async () => {
    h.provider().always('limited-model', { kind: 'status', status: 429 });
    const body = workBody({
      route: [{ provider: 'scripted', model: 'limited-model' }],
      limits: { max_retries: 1, run_retry_attempts: 0, dispatch_ceiling: 2, max_tokens: 64, timeout_ms: 10_000 },
    });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['status']).toBe('failed');
    expect(status['error']).toContain('dispatch ceiling of 2');
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    const attempts = receipt['attempts'] as Record<string, unknown>[];
    expect(attempts).toHaveLength(2);
    expect(attempts.every((a) => a['domain'] === 'account' && a['settlement'] === 'failed')).toBe(true);
    expect(receipt['winning_attempt']).toBeNull();
    expect(h.calls('limited-model')).toBe(2);
  });

  it('O3 an abort mid-stream ends the work aborted, its attempt cancelled, the partial output kept in the log and the messages, never retried', async () => {
    h.provider().script('abort-model', [
      { kind: 'stream', chunks: ['partial ', 'answer', ' never', ' finished'], chunkDelayMs: 400, end: 'hang' },
    ]);
    const body = workBody({ route: [{ provider: 'scripted', model: 'abort-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    await h.eventually('the stream to start', async () => (h.calls('abort-model') > 0 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1_200));
    expect((await h.post(`/v1/work/${body['work_id']}/abort`, {})).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['status']).toBe('aborted');
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    const attempts = receipt['attempts'] as Record<string, unknown>[];
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ settlement: 'cancelled' });
    expect(receipt['winning_attempt']).toBeNull();
    expect(h.calls('abort-model')).toBe(1);
    const log = await h.sessionLog(body['session_id'] as string, body['work_id'] as string);
    expect(log.entries.some((e) => e['kind'] === 'message' && String(e['content']).includes('partial answer'))).toBe(
      true,
    );
    const messages = (await h.get(`/v1/sessions/${body['session_id']}/messages`)).body['messages'] as {
      content: string;
    }[];
    expect(messages.some((m) => m.content.includes('partial answer'))).toBe(true);
  });
});
