// A real HTTP server that plays an LLM provider for tests and benchmarks (spec O8): it speaks
// OpenAI Chat Completions SSE on /v1/chat/completions and Anthropic Messages SSE on
// /v1/messages, and follows a script per model: statuses, chunks, resets, hangs, bad JSON.
// Every request is recorded, so `calls(model)` is the number of paid calls a test made.
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ScriptedUsage {
  input_tokens: number;
  output_tokens: number;
}

/**
 * How a streamed response ends after its chunks: 'complete' sends usage and the terminator and
 * closes; 'linger' sends them but keeps the response open; 'destroy' drops the socket; 'hang'
 * stops sending; 'malformed' sends a broken JSON chunk; 'error-event' sends a provider error event.
 */
export type ScriptedStreamEnd = 'complete' | 'linger' | 'destroy' | 'hang' | 'malformed' | 'error-event';

export type ScriptedStep =
  /** Answer with this status (and optional Retry-After) and a provider-shaped error body. */
  | { kind: 'status'; status: number; retryAfter?: string; body?: string; latencyMs?: number }
  /** Stream `chunks` as text deltas; `end` (default 'complete') decides how it finishes. */
  | {
      kind: 'stream';
      chunks: string[];
      usage?: ScriptedUsage | null;
      end?: ScriptedStreamEnd;
      /** For end 'error-event': the provider error type, e.g. 'overloaded_error'. */
      errorType?: string;
      latencyMs?: number;
      chunkDelayMs?: number;
      lineEnding?: '\n' | '\r\n';
      /** Write the whole stream in pieces of this many bytes, to split events at odd places. */
      fragmentBytes?: number;
      /** Put an SSE comment (`: ping`) between events, as providers do to keep connections alive. */
      heartbeat?: boolean;
      /** Tool calls after the text, each streamed in two argument pieces; the stop reason becomes tool use. */
      toolCalls?: ScriptedToolCall[];
    }
  /** Reset the connection before sending any byte of the response. */
  | { kind: 'reset'; latencyMs?: number }
  /** Read the request and never answer. */
  | { kind: 'hang' }
  /** Send exactly this body (in fragments if asked), for parser edge cases. */
  | { kind: 'raw'; body: string; status?: number; contentType?: string; fragmentBytes?: number; latencyMs?: number };

export type ScriptedApi = 'openai' | 'anthropic';

export interface ScriptedToolCall {
  id: string;
  name: string;
  /** The JSON text of the tool's input. */
  arguments: string;
}

export interface ScriptedRequest {
  api: ScriptedApi;
  model: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The client's port: equal ports on successive requests mean a reused keep-alive connection. */
  remotePort: number | undefined;
  /** When the request's body was read, by this server's clock: waits between calls are measured here, not by polling. */
  receivedAtMs: number;
}

const DEFAULT_USAGE: ScriptedUsage = { input_tokens: 5, output_tokens: 3 };
const REQUEST_BODY_MAX_BYTES = 8 * 1024 * 1024;
const ROUTES: Record<string, ScriptedApi> = { '/v1/chat/completions': 'openai', '/v1/messages': 'anthropic' };

export class ScriptedProvider {
  private readonly queues = new Map<string, ScriptedStep[]>();
  private readonly fixed = new Map<string, ScriptedStep>();
  private defaultStep: ScriptedStep = { kind: 'stream', chunks: ['ok'] };
  private readonly seen: ScriptedRequest[] = [];
  private inFlight = 0;
  private inFlightPeak = 0;
  /** While set, recorded requests wait here before their step plays (see holdResponses). */
  private gate: { promise: Promise<void>; open: () => void } | undefined;
  /** Cancels pending latencies and chunk delays when the server stops. */
  private readonly stopping = new AbortController();

  private constructor(private readonly server: Server) {
    // Every pending latency or chunk delay listens on this signal; a benchmark has 1,000+.
    setMaxListeners(0, this.stopping.signal);
  }

  static async start(): Promise<ScriptedProvider> {
    const server = createServer();
    const provider = new ScriptedProvider(server);
    server.on('request', (req, res) => void provider.handle(req, res));
    // Longer than any client's idle-socket timeout, so the client always closes first.
    server.keepAliveTimeout = 65_000;
    // Benchmarks open 1,000+ connections at once; a short accept backlog would stall them.
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, resolve);
    });
    return provider;
  }

  /** Base URL ending in /v1, as a provider's base_url. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** The next requests for `model` take these steps in order, then fall back to always()/setDefault(). */
  script(model: string, steps: ScriptedStep[]): this {
    this.queues.set(model, [...steps]);
    return this;
  }

  /** Every request for `model` takes this step once its script queue is empty. */
  always(model: string, step: ScriptedStep): this {
    this.fixed.set(model, step);
    return this;
  }

  /** The step for models without a script (initially a short successful stream). */
  setDefault(step: ScriptedStep): this {
    this.defaultStep = step;
    return this;
  }

  /** Requests received for `model`, or for all models when omitted. */
  calls(model?: string): number {
    return model === undefined ? this.seen.length : this.seen.filter((r) => r.model === model).length;
  }

  get requests(): readonly ScriptedRequest[] {
    return this.seen;
  }

  /** Requests open right now. */
  get inFlightNow(): number {
    return this.inFlight;
  }

  /** Holds every new request (after recording it) until releaseResponses(), to pin concurrency. */
  holdResponses(): void {
    if (this.gate) return;
    let open = (): void => undefined;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.gate = { promise, open };
  }

  releaseResponses(): void {
    this.gate?.open();
    this.gate = undefined;
  }

  /** Most requests ever open at once; a client-side connection cap shows up here. */
  get peakInFlight(): number {
    return this.inFlightPeak;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    this.releaseResponses();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight++;
    this.inFlightPeak = Math.max(this.inFlightPeak, this.inFlight);
    res.once('close', () => this.inFlight--);
    try {
      const api = ROUTES[(req.url ?? '').split('?')[0] ?? ''];
      const body = await readJson(req);
      if (!api || req.method !== 'POST') return void res.writeHead(404).end();
      if (!body || typeof body['model'] !== 'string')
        return void res.writeHead(400).end('{"error":{"message":"model required"}}');
      const model = body['model'];
      this.seen.push({
        api,
        model,
        headers: req.headers,
        body,
        remotePort: req.socket.remotePort,
        receivedAtMs: Date.now(),
      });
      if (this.gate) await this.gate.promise;
      await this.play(this.nextStep(model), api, model, res);
    } catch {
      // The client went away or the server is stopping; there is nobody left to answer.
      if (!res.destroyed) res.destroy();
    }
  }

  private nextStep(model: string): ScriptedStep {
    return this.queues.get(model)?.shift() ?? this.fixed.get(model) ?? this.defaultStep;
  }

  private async play(step: ScriptedStep, api: ScriptedApi, model: string, res: ServerResponse): Promise<void> {
    if (step.kind === 'hang') return;
    if (step.latencyMs) await sleep(step.latencyMs, undefined, { signal: this.stopping.signal });
    res.socket?.setNoDelay(true);
    switch (step.kind) {
      case 'reset':
        res.socket?.resetAndDestroy();
        return;
      case 'status': {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (step.retryAfter !== undefined) headers['retry-after'] = step.retryAfter;
        res.writeHead(step.status, headers).end(step.body ?? errorBody(api, step.status));
        return;
      }
      case 'raw':
        res.writeHead(step.status ?? 200, { 'content-type': step.contentType ?? 'text/event-stream' });
        await this.writeFragments(res, step.body, step.fragmentBytes ?? step.body.length);
        res.end();
        return;
      case 'stream':
        await this.stream(step, api, model, res);
        return;
    }
  }

  private async stream(
    step: Extract<ScriptedStep, { kind: 'stream' }>,
    api: ScriptedApi,
    model: string,
    res: ServerResponse,
  ): Promise<void> {
    const end = step.end ?? 'complete';
    const usage = step.usage === undefined ? DEFAULT_USAGE : step.usage;
    const framesEnd = end === 'linger' ? 'complete' : end;
    const frames =
      api === 'openai'
        ? openAiFrames(model, step.chunks, usage, framesEnd, step.errorType, step.toolCalls)
        : anthropicFrames(model, step.chunks, usage, framesEnd, step.errorType, step.toolCalls);
    const eol = step.lineEnding ?? '\n';
    const events = frames.map((f) => f.replaceAll('\n', eol));
    const withHeartbeats = step.heartbeat ? events.flatMap((e) => [`: ping${eol}${eol}`, e]) : events;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (step.fragmentBytes) await this.writeFragments(res, withHeartbeats.join(''), step.fragmentBytes);
    else if (!step.chunkDelayMs)
      res.write(withHeartbeats.join('')); // One write keeps benchmarks cheap.
    else {
      for (const event of withHeartbeats) {
        if (res.destroyed) return;
        res.write(event);
        await sleep(step.chunkDelayMs, undefined, { signal: this.stopping.signal });
      }
    }
    if (end === 'hang' || end === 'linger') return;
    if (end === 'destroy') {
      // Let the chunks reach the client before the connection drops, like a provider crash.
      await sleep(20, undefined, { signal: this.stopping.signal });
      res.socket?.destroy();
      return;
    }
    res.end();
  }

  /** Separate writes with a short pause so TCP delivers them as separate reads. */
  private async writeFragments(res: ServerResponse, text: string, fragmentBytes: number): Promise<void> {
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length; at += fragmentBytes) {
      if (res.destroyed) return;
      res.write(bytes.subarray(at, at + fragmentBytes));
      await sleep(1, undefined, { signal: this.stopping.signal });
    }
  }
}

function openAiFrames(
  model: string,
  chunks: string[],
  usage: ScriptedUsage | null,
  end: ScriptedStreamEnd,
  errorType?: string,
  toolCalls: ScriptedToolCall[] = [],
): string[] {
  const base = { id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 0, model };
  const frame = (payload: object): string => `data: ${JSON.stringify({ ...base, ...payload })}\n\n`;
  const frames = [frame({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })];
  for (const text of chunks)
    frames.push(frame({ choices: [{ index: 0, delta: { content: text }, finish_reason: null }] }));
  if (end === 'malformed') frames.push('data: {"choices":[{"index":0,"delta":{"content":"trunc\n\n');
  if (end === 'error-event')
    frames.push(
      `data: ${JSON.stringify({ error: { message: 'scripted stream error', type: errorType ?? 'server_error', code: errorType ?? null } })}\n\n`,
    );
  toolCalls.forEach((call, index) => {
    const half = Math.ceil(call.arguments.length / 2);
    const start = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    frames.push(frame({ choices: [{ index: 0, delta: { tool_calls: [start] }, finish_reason: null }] }));
    for (const piece of [call.arguments.slice(0, half), call.arguments.slice(half)])
      frames.push(
        frame({
          choices: [
            { index: 0, delta: { tool_calls: [{ index, function: { arguments: piece } }] }, finish_reason: null },
          ],
        }),
      );
  });
  if (end !== 'complete') return frames;
  const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  frames.push(frame({ choices: [{ index: 0, delta: {}, finish_reason: finish }] }));
  if (usage)
    frames.push(
      frame({
        choices: [],
        usage: {
          prompt_tokens: usage.input_tokens,
          completion_tokens: usage.output_tokens,
          total_tokens: usage.input_tokens + usage.output_tokens,
        },
      }),
    );
  frames.push('data: [DONE]\n\n');
  return frames;
}

function anthropicFrames(
  model: string,
  chunks: string[],
  usage: ScriptedUsage | null,
  end: ScriptedStreamEnd,
  errorType?: string,
  toolCalls: ScriptedToolCall[] = [],
): string[] {
  const frame = (payload: { type: string } & Record<string, unknown>): string =>
    `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;
  const startUsage = usage ? { input_tokens: usage.input_tokens, output_tokens: 1 } : undefined;
  const message = {
    id: 'msg_scripted',
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    usage: startUsage,
  };
  const frames = [
    frame({ type: 'message_start', message }),
    frame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (const text of chunks)
    frames.push(frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }));
  if (end === 'malformed')
    frames.push('event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"te\n\n');
  if (end === 'error-event')
    frames.push(
      frame({ type: 'error', error: { type: errorType ?? 'overloaded_error', message: 'scripted stream error' } }),
    );
  if (end !== 'complete') return frames;
  frames.push(frame({ type: 'content_block_stop', index: 0 }));
  toolCalls.forEach((call, i) => {
    const index = i + 1;
    const half = Math.ceil(call.arguments.length / 2);
    const block = { type: 'tool_use', id: call.id, name: call.name, input: {} };
    frames.push(frame({ type: 'content_block_start', index, content_block: block }));
    for (const piece of [call.arguments.slice(0, half), call.arguments.slice(half)])
      frames.push(
        frame({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }),
      );
    frames.push(frame({ type: 'content_block_stop', index }));
  });
  frames.push(
    frame({
      type: 'message_delta',
      delta: { stop_reason: toolCalls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
      ...(usage ? { usage: { output_tokens: usage.output_tokens } } : {}),
    }),
  );
  frames.push(frame({ type: 'message_stop' }));
  return frames;
}

function errorBody(api: ScriptedApi, status: number): string {
  const message = `scripted status ${status}`;
  if (api === 'openai')
    return JSON.stringify({
      error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'api_error', code: null },
    });
  return JSON.stringify({ type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'api_error', message } });
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > REQUEST_BODY_MAX_BYTES) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
