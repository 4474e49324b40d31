// Proves the scripted provider is a real HTTP server that plays scripts per model and counts every call (O8).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request as httpRequest } from 'node:http';
import { ScriptedProvider } from '../src/index.js';

let server: ScriptedProvider;
beforeAll(async () => {
  server = await ScriptedProvider.start();
});
afterAll(async () => {
  await server.stop();
});

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Posts with node:http so resets and partial bodies surface as errors; no agent, so no pooled socket outlives the test. */
function post(path: string, body: unknown): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}${path}`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('ScriptedProvider', () => {
  it('listens on 127.0.0.1 and exposes a base url ending in /v1', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it('O8 serves OpenAI chat completion SSE with usage and [DONE]', async () => {
    server.script('sse-openai', [{ kind: 'stream', chunks: ['Hi'], usage: { input_tokens: 3, output_tokens: 1 } }]);
    const res = await post('/chat/completions', { model: 'sse-openai', messages: [] });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.body).toContain('"delta":{"content":"Hi"}');
    expect(res.body).toContain('"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}');
    expect(res.body.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('O8 serves Anthropic messages SSE with typed events and usage', async () => {
    server.script('sse-anthropic', [{ kind: 'stream', chunks: ['Hi'], usage: { input_tokens: 3, output_tokens: 1 } }]);
    const res = await post('/messages', { model: 'sse-anthropic', messages: [] });
    const events = [...res.body.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    expect(events).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(res.body).toContain('"usage":{"input_tokens":3,"output_tokens":1}');
    expect(res.body).toContain('"usage":{"output_tokens":1}');
  });

  it('plays a model script in order, then falls back to always() and then to the default', async () => {
    server.script('queued', [
      { kind: 'status', status: 429, retryAfter: '3' },
      { kind: 'status', status: 503 },
    ]);
    const first = await post('/chat/completions', { model: 'queued' });
    expect(first.status).toBe(429);
    expect(first.headers['retry-after']).toBe('3');
    expect((await post('/chat/completions', { model: 'queued' })).status).toBe(503);
    expect((await post('/chat/completions', { model: 'queued' })).body).toContain('[DONE]');
    server.always('queued', { kind: 'status', status: 401 });
    expect((await post('/chat/completions', { model: 'queued' })).status).toBe(401);
    expect((await post('/chat/completions', { model: 'queued' })).status).toBe(401);
  });

  it('counts every request per model, including ones it reset, as paid calls', async () => {
    server.script('counted', [{ kind: 'reset' }]);
    await expect(post('/messages', { model: 'counted' })).rejects.toMatchObject({ code: 'ECONNRESET' });
    await post('/messages', { model: 'counted' });
    expect(server.calls('counted')).toBe(2);
    expect(server.requests.filter((r) => r.model === 'counted').map((r) => r.api)).toEqual(['anthropic', 'anthropic']);
  });

  it('drops the connection mid-stream after sending its chunks', async () => {
    server.script('dropped', [{ kind: 'stream', chunks: ['part'], end: 'destroy' }]);
    await expect(post('/chat/completions', { model: 'dropped' })).rejects.toThrow(/aborted|socket hang up/);
  });

  it('applies a fixed latency before answering', async () => {
    server.script('slow', [{ kind: 'stream', chunks: ['x'], latencyMs: 200 }]);
    const started = performance.now();
    await post('/chat/completions', { model: 'slow' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('answers unknown paths with 404 and bodies without a model with 400', async () => {
    expect((await post('/embeddings', { model: 'x' })).status).toBe(404);
    expect((await post('/chat/completions', { messages: [] })).status).toBe(400);
  });
});
