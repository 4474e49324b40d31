// Proves O5 and O8 end to end: retry-after is honoured, fallback legs are route_fallback
// attempts, 429s never trip the breaker, and both provider kinds (OpenAI Chat Completions
// and Anthropic Messages, streaming) work over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'o58' });
beforeAll(async () => {
  await h.start(1);
}, 180_000);
afterAll(() => h.dispose(), 60_000);

type Attempt = Record<string, unknown>;
const attemptsOf = async (id: string) => (await h.get(`/v1/work/${id}/receipt`)).body['attempts'] as Attempt[];

describe('agent-orchestrator O5 retries and O8 providers over HTTP', () => {
  it('O5 a 429 with retry-after 1 s is waited out before the retry on the same leg', async () => {
    h.provider().script('slow-model', [
      { kind: 'status', status: 429, retryAfter: '1' },
      { kind: 'stream', chunks: ['after wait'] },
    ]);
    const body = workBody({ route: [{ provider: 'scripted', model: 'slow-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    await h.eventually('the second call', async () => (h.calls('slow-model') >= 2 ? true : undefined));
    // Measured where the calls arrive: polling for them would see the first one late on a busy machine.
    const [first, second] = h.provider().requests.filter((r) => r.model === 'slow-model');
    expect(second!.receivedAtMs - first!.receivedAtMs).toBeGreaterThanOrEqual(950);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({ status: 'completed', output: 'after wait' });
    const attempts = await attemptsOf(body['work_id'] as string);
    expect(attempts.map((a) => [a['reason'], a['domain'], a['settlement']])).toEqual([
      ['initial', 'account', 'failed'],
      ['retry', 'unknown', 'ok'],
    ]);
  });

  it('O5 a leg that stays overloaded falls back to the next leg, recorded as route_fallback', async () => {
    const body = workBody({
      route: [
        { provider: 'scripted', model: 'limited-model' },
        { provider: 'scripted', model: 'fallback-model' },
      ],
      limits: { max_retries: 0, run_retry_attempts: 0, dispatch_ceiling: 3, max_tokens: 64, timeout_ms: 10_000 },
    });
    h.provider().script('limited-model', [{ kind: 'status', status: 503 }]);
    h.provider().script('fallback-model', [{ kind: 'stream', chunks: ['from fallback'] }]);
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({ status: 'completed', output: 'from fallback' });
    const attempts = await attemptsOf(body['work_id'] as string);
    expect(attempts.map((a) => [a['reason'], a['domain'], a['settlement'], a['model']])).toEqual([
      ['initial', 'provider', 'failed', 'limited-model'],
      ['route_fallback', 'unknown', 'ok', 'fallback-model'],
    ]);
  });

  it('O5 rate limits never trip the circuit breaker: six 429s are six real calls, none refused by an open breaker', async () => {
    h.provider().always('limited-model', { kind: 'status', status: 429 });
    const body = workBody({
      route: [{ provider: 'scripted', model: 'limited-model' }],
      limits: { max_retries: 5, run_retry_attempts: 0, max_tokens: 64, timeout_ms: 10_000 },
    });
    const before = h.calls('limited-model');
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['error']).toContain('dispatch ceiling of 6');
    const attempts = await attemptsOf(body['work_id'] as string);
    expect(attempts).toHaveLength(6);
    expect(attempts.every((a) => a['domain'] === 'account' && !String(a['error']).includes('circuit breaker'))).toBe(
      true,
    );
    expect(h.calls('limited-model') - before).toBe(6);
  });

  it('O8 the Anthropic Messages provider streams over real HTTP with its usage', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['hello ', 'from anthropic'], usage: { input_tokens: 7, output_tokens: 4 } },
    ]);
    const body = workBody({ route: [{ provider: 'scripted-anthropic', model: 'ok-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({
      status: 'completed',
      output: 'hello from anthropic',
    });
    const attempts = await attemptsOf(body['work_id'] as string);
    expect(attempts).toEqual([
      expect.objectContaining({
        provider: 'scripted-anthropic',
        settlement: 'ok',
        usage: { input_tokens: 7, output_tokens: 4, cost_units: 15 },
      }),
    ]);
    expect(h.provider().requests.at(-1)!.api).toBe('anthropic');
  });

  it('O8 the OpenAI Chat Completions provider streams over real HTTP with its usage and the configured API key', async () => {
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['hello ', 'from openai'], usage: { input_tokens: 2, output_tokens: 1 } },
    ]);
    const body = workBody({ route: [{ provider: 'scripted', model: 'ok-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    expect(await h.terminal(body['work_id'] as string)).toMatchObject({
      status: 'completed',
      output: 'hello from openai',
    });
    const last = h.provider().requests.at(-1)!;
    expect(last.api).toBe('openai');
    expect(last.headers['authorization']).toBe('Bearer test-key');
  });
});
