// Proves SSE streaming over real HTTP (O8): odd chunk boundaries, usage extraction, progress
// callbacks, caller aborts that keep partial output (O3), the watchdogs, and in-stream errors.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScriptedProvider } from '@tally/testing';
import {
  DEFAULT_GATEWAY_OPTIONS,
  type DispatchOutcome,
  type DispatchRequest,
  type ProviderKind,
} from '../src/index.js';
import { API_KEY, KINDS, noAbort, registryFor, request } from './gateway.fixture.js';

let server: ScriptedProvider;
beforeAll(async () => {
  server = await ScriptedProvider.start();
});
afterAll(async () => {
  await server.stop();
});

async function dispatchOnce(
  kind: ProviderKind,
  req: DispatchRequest,
  signal = noAbort(),
  onProgress?: () => void,
  idleTimeoutMs?: number,
): Promise<DispatchOutcome> {
  const attempt = { ...DEFAULT_GATEWAY_OPTIONS.attempt, ...(idleTimeoutMs ? { idleTimeoutMs } : {}) };
  const registry = registryFor(server, kind, { attempt });
  try {
    return await registry.dispatch(req, signal, onProgress);
  } finally {
    registry.close();
  }
}

describe.each(KINDS)('streaming (%s)', (kind) => {
  it.each([2, 5, 13])(
    'O8 parses a stream delivered in %i-byte fragments, splitting events and UTF-8 anywhere',
    async (fragmentBytes) => {
      const model = `${kind}-fragments-${fragmentBytes}`;
      server.script(model, [
        {
          kind: 'stream',
          chunks: ['Grüße ', '— ', '日本', ' 🎉'],
          fragmentBytes,
          lineEnding: '\r\n',
          heartbeat: true,
          usage: { input_tokens: 9, output_tokens: 4 },
        },
      ]);
      // Hundreds of tiny writes are slow on a loaded machine; this test is about parsing, not time.
      const outcome = await dispatchOnce(kind, request(model, { timeout_ms: 60_000 }));
      expect(outcome).toMatchObject({
        kind: 'ok',
        output: 'Grüße — 日本 🎉',
        usage: { input_tokens: 9, output_tokens: 4 },
      });
    },
  );

  it('O8 extracts usage from the stream and maps it to input/output tokens', async () => {
    const model = `${kind}-usage`;
    server.script(model, [{ kind: 'stream', chunks: ['a'], usage: { input_tokens: 1234, output_tokens: 567 } }]);
    expect(await dispatchOnce(kind, request(model))).toEqual({
      kind: 'ok',
      output: 'a',
      stop_reason: 'end_turn',
      usage: { input_tokens: 1234, output_tokens: 567 },
      latency_ms: expect.any(Number),
    });
  });

  it('usage the provider did not report stays absent (absent is unknown, never zero)', async () => {
    const model = `${kind}-no-usage`;
    server.script(model, [{ kind: 'stream', chunks: ['a'], usage: null }]);
    const outcome = await dispatchOnce(kind, request(model));
    expect(outcome.kind).toBe('ok');
    expect(outcome.usage).toBeUndefined();
  });

  it('sends the request the provider API expects, with the API key from api_key_env', async () => {
    const model = `${kind}-wire`;
    await dispatchOnce(
      kind,
      request(model, {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi' },
        ],
        max_tokens: 42,
      }),
    );
    const seen = server.requests.filter((r) => r.model === model)[0]!;
    expect(seen.api).toBe(kind);
    expect(seen.body).toMatchObject({ model, max_tokens: 42, stream: true });
    if (kind === 'openai') {
      expect(seen.headers['authorization']).toBe(`Bearer ${API_KEY}`);
      expect(seen.body).toMatchObject({
        stream_options: { include_usage: true },
        messages: [{ role: 'system' }, { role: 'user' }],
      });
    } else {
      expect(seen.headers['x-api-key']).toBe(API_KEY);
      expect(seen.headers['anthropic-version']).toBe('2023-06-01');
      expect(seen.body).toMatchObject({ system: 'be brief', messages: [{ role: 'user', content: 'hi' }] });
    }
  });

  it('O6 calls onProgress for every received chunk, so a worker can send in-progress acks', async () => {
    const model = `${kind}-progress`;
    server.script(model, [{ kind: 'stream', chunks: ['a', 'b', 'c', 'd'], chunkDelayMs: 10 }]);
    let progress = 0;
    const outcome = await dispatchOnce(kind, request(model), noAbort(), () => progress++);
    expect(outcome.kind).toBe('ok');
    expect(progress).toBeGreaterThanOrEqual(4);
  });

  it('O3 an abort by the caller mid-stream is unknown/cancelled and keeps the partial output', async () => {
    const model = `${kind}-caller-abort`;
    server.script(model, [{ kind: 'stream', chunks: ['first ', 'second'], chunkDelayMs: 5, end: 'hang' }]);
    const controller = new AbortController();
    const started = Date.now();
    // Abort once the hanging stream has delivered its chunks.
    setTimeout(() => controller.abort(), 300);
    const outcome = await dispatchOnce(kind, request(model), controller.signal);
    expect(outcome).toMatchObject({
      kind: 'error',
      domain: 'unknown',
      settlement: 'cancelled',
      partial_output: 'first second',
      error: 'aborted by caller',
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('O3 an abort by the caller before the response is unknown/cancelled', async () => {
    const model = `${kind}-caller-abort-early`;
    server.script(model, [{ kind: 'hang' }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    expect(await dispatchOnce(kind, request(model), controller.signal)).toMatchObject({
      kind: 'error',
      domain: 'unknown',
      settlement: 'cancelled',
    });
  });

  it('an already-aborted signal makes no call', async () => {
    const model = `${kind}-pre-aborted`;
    const controller = new AbortController();
    controller.abort();
    expect(await dispatchOnce(kind, request(model), controller.signal)).toMatchObject({
      domain: 'unknown',
      settlement: 'cancelled',
    });
    expect(server.calls(model)).toBe(0);
  });

  it('the idle watchdog ends a stream that stalls between chunks as deadline/unknown with its partial output', async () => {
    const model = `${kind}-stall`;
    server.script(model, [{ kind: 'stream', chunks: ['so far'], end: 'hang' }]);
    const outcome = await dispatchOnce(kind, request(model, { timeout_ms: 10_000 }), noAbort(), undefined, 200);
    expect(outcome).toMatchObject({
      kind: 'error',
      domain: 'deadline',
      settlement: 'unknown',
      partial_output: 'so far',
      error: expect.stringContaining('no chunk for 200 ms'),
    });
    expect(outcome.latency_ms).toBeLessThan(5_000);
  });

  it('the overall watchdog (timeout_ms) ends a slow but steady stream as deadline/unknown', async () => {
    const model = `${kind}-slow`;
    server.script(model, [{ kind: 'stream', chunks: Array.from({ length: 50 }, () => 'x'), chunkDelayMs: 40 }]);
    const outcome = await dispatchOnce(kind, request(model, { timeout_ms: 400 }));
    expect(outcome).toMatchObject({
      kind: 'error',
      domain: 'deadline',
      settlement: 'unknown',
      partial_output: expect.stringMatching(/^x+$/),
    });
  });

  it('an error event after output is classified by its type and settles unknown, keeping the partial output', async () => {
    const model = `${kind}-error-event`;
    const errorType = kind === 'openai' ? 'rate_limit_exceeded' : 'overloaded_error';
    server.script(model, [{ kind: 'stream', chunks: ['began'], end: 'error-event', errorType }]);
    const domain = kind === 'openai' ? 'account' : 'provider';
    expect(await dispatchOnce(kind, request(model))).toMatchObject({
      kind: 'error',
      domain,
      settlement: 'unknown',
      partial_output: 'began',
    });
  });

  it('ends the attempt at the terminal event even if the server keeps the response open', async () => {
    const model = `${kind}-linger`;
    server.script(model, [{ kind: 'stream', chunks: ['done'], end: 'linger' }]);
    const outcome = await dispatchOnce(kind, request(model, { timeout_ms: 5_000 }));
    expect(outcome).toMatchObject({ kind: 'ok', output: 'done', usage: { input_tokens: 5, output_tokens: 3 } });
    expect(outcome.latency_ms).toBeLessThan(2_000);
  });

  it('reuses one keep-alive connection for successive dispatches', async () => {
    const model = `${kind}-keep-alive`;
    const registry = registryFor(server, kind);
    for (let i = 0; i < 3; i++) expect((await registry.dispatch(request(model), noAbort())).kind).toBe('ok');
    registry.close();
    const ports = new Set(server.requests.filter((r) => r.model === model).map((r) => r.remotePort));
    expect(ports.size).toBe(1);
  });

  it('a stream that closes cleanly before the provider signalled completion is unknown/cancelled', async () => {
    const model = `${kind}-truncated`;
    const body =
      kind === 'openai'
        ? 'data: {"choices":[{"index":0,"delta":{"content":"cut"}}]}\n\n'
        : 'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"cut"}}\n\n';
    server.script(model, [{ kind: 'raw', body }]);
    expect(await dispatchOnce(kind, request(model))).toMatchObject({
      kind: 'error',
      domain: 'unknown',
      settlement: 'cancelled',
      partial_output: 'cut',
    });
  });
});
