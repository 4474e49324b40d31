// Proves every row of the spec's error classification table, for both OpenAI and Anthropic, over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort, ScriptedProvider } from '@tally/testing';
import { KINDS, noAbort, registryFor, request } from './gateway.fixture.js';

let server: ScriptedProvider;
beforeAll(async () => {
  server = await ScriptedProvider.start();
});
afterAll(async () => {
  await server.stop();
});

describe.each(KINDS)('classification table (%s)', (kind) => {
  const dispatchScripted = async (model: string) => {
    const registry = registryFor(server, kind);
    try {
      return await registry.dispatch(request(model), noAbort());
    } finally {
      registry.close();
    }
  };

  it.each([401, 403])('auth %i is account/failed and reports its HTTP status', async (status) => {
    const model = `${kind}-auth-${status}`;
    server.script(model, [{ kind: 'status', status }]);
    expect(await dispatchScripted(model)).toMatchObject({
      kind: 'error',
      domain: 'account',
      settlement: 'failed',
      http_status: status,
      error: expect.stringContaining(`HTTP ${status}`),
    });
  });

  it('rate limit 429 is account/failed and carries retry_after_ms from Retry-After seconds', async () => {
    const model = `${kind}-429`;
    server.script(model, [{ kind: 'status', status: 429, retryAfter: '7' }]);
    expect(await dispatchScripted(model)).toMatchObject({
      kind: 'error',
      domain: 'account',
      settlement: 'failed',
      http_status: 429,
      retry_after_ms: 7_000,
    });
  });

  it('rate limit 429 honours a Retry-After HTTP date', async () => {
    const model = `${kind}-429-date`;
    server.script(model, [{ kind: 'status', status: 429, retryAfter: new Date(Date.now() + 30_000).toUTCString() }]);
    const outcome = await dispatchScripted(model);
    expect(outcome).toMatchObject({ domain: 'account', settlement: 'failed' });
    const retry = outcome.kind === 'error' ? (outcome.retry_after_ms ?? -1) : -1;
    // HTTP dates have one-second resolution, so allow for the truncation and test latency.
    expect(retry).toBeGreaterThan(27_000);
    expect(retry).toBeLessThanOrEqual(30_000);
  });

  it.each([503, 529])('overloaded %i is provider/failed', async (status) => {
    const model = `${kind}-overloaded-${status}`;
    server.script(model, [{ kind: 'status', status }]);
    expect(await dispatchScripted(model)).toMatchObject({ kind: 'error', domain: 'provider', settlement: 'failed' });
  });

  it.each([400, 404, 422])('invalid request %i is request/failed', async (status) => {
    const model = `${kind}-invalid-${status}`;
    server.script(model, [{ kind: 'status', status }]);
    expect(await dispatchScripted(model)).toMatchObject({ kind: 'error', domain: 'request', settlement: 'failed' });
  });

  it.each([500, 502, 504])('other API error %i is request/unknown (may have been billed)', async (status) => {
    const model = `${kind}-5xx-${status}`;
    server.script(model, [{ kind: 'status', status }]);
    expect(await dispatchScripted(model)).toMatchObject({ kind: 'error', domain: 'request', settlement: 'unknown' });
  });

  it('network: a connection reset before any byte is network/unknown', async () => {
    const model = `${kind}-reset`;
    server.script(model, [{ kind: 'reset' }]);
    expect(await dispatchScripted(model)).toMatchObject({
      kind: 'error',
      domain: 'network',
      settlement: 'unknown',
      error: expect.stringContaining('ECONNRESET'),
    });
    expect(server.calls(model)).toBe(1);
  });

  it('network: a refused connection is network/unknown', async () => {
    const registry = registryFor({ url: `http://127.0.0.1:${await freePort()}/v1` }, kind);
    const outcome = await registry.dispatch(request('any'), noAbort());
    registry.close();
    expect(outcome).toMatchObject({
      kind: 'error',
      domain: 'network',
      settlement: 'unknown',
      error: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('network: an unresolvable host (DNS) is network/unknown', async () => {
    const registry = registryFor({ url: 'http://tally-no-such-host.invalid/v1' }, kind);
    const outcome = await registry.dispatch(request('any', { timeout_ms: 20_000 }), noAbort());
    registry.close();
    expect(outcome).toMatchObject({ kind: 'error', domain: 'network', settlement: 'unknown' });
  });

  it('unparseable response: a malformed JSON chunk is model/unknown and keeps the partial output', async () => {
    const model = `${kind}-malformed`;
    server.script(model, [{ kind: 'stream', chunks: ['half ', 'said'], end: 'malformed' }]);
    expect(await dispatchScripted(model)).toMatchObject({
      kind: 'error',
      domain: 'model',
      settlement: 'unknown',
      partial_output: 'half said',
    });
  });

  it('unparseable response: a 200 that is not an event stream is model/unknown', async () => {
    const model = `${kind}-not-sse`;
    server.script(model, [{ kind: 'raw', body: '<html>gateway</html>', contentType: 'text/html' }]);
    expect(await dispatchScripted(model)).toMatchObject({ kind: 'error', domain: 'model', settlement: 'unknown' });
  });

  it('aborted mid-stream by the server is unknown/cancelled and keeps the partial output (O3)', async () => {
    const model = `${kind}-mid-stream`;
    server.script(model, [{ kind: 'stream', chunks: ['partial ', 'answer'], end: 'destroy' }]);
    expect(await dispatchScripted(model)).toMatchObject({
      kind: 'error',
      domain: 'unknown',
      settlement: 'cancelled',
      partial_output: 'partial answer',
    });
  });

  it('watchdog timeout on a provider that never answers is deadline/unknown', async () => {
    const model = `${kind}-hang`;
    server.script(model, [{ kind: 'hang' }]);
    const registry = registryFor(server, kind);
    const outcome = await registry.dispatch(request(model, { timeout_ms: 300 }), noAbort());
    registry.close();
    expect(outcome).toMatchObject({ kind: 'error', domain: 'deadline', settlement: 'unknown' });
    expect(outcome.latency_ms).toBeGreaterThanOrEqual(290);
  });

  it('success is kind ok (settlement ok) with the streamed text and the provider usage', async () => {
    const model = `${kind}-ok`;
    server.script(model, [{ kind: 'stream', chunks: ['Hel', 'lo'], usage: { input_tokens: 11, output_tokens: 2 } }]);
    expect(await dispatchScripted(model)).toMatchObject({
      kind: 'ok',
      output: 'Hello',
      usage: { input_tokens: 11, output_tokens: 2 },
    });
  });
});
