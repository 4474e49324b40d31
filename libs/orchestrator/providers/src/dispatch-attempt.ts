// One attempt against one provider: send, stream, decode, and turn whatever happened into a
// DispatchOutcome. Nothing here throws for a provider failure; every path is classified.
import type { IncomingMessage } from 'node:http';
import { context, propagation } from '@opentelemetry/api';
import { AttemptWatchdog } from './attempt-watchdog.js';
import { classifyHttpStatus, describeError, isNetworkError, type ClassifiedFailure } from './failure-classification.js';
import { readBodyBounded, type HttpTransport } from './http-transport.js';
import { StreamProtocolError, type ProviderProtocol, type StreamDecoder } from './provider-protocol.js';
import type { DispatchDelta, DispatchOutcome, DispatchRequest } from './provider-gateway.types.js';
import { SseOverflowError, SseParser } from './sse-parser.js';

/** How long the body may stay open after the terminal event (see finishBody). */
const TERMINAL_GRACE_MS = 250;

export interface AttemptLimits {
  /** Longest silence allowed between chunks once the response has started. */
  idleTimeoutMs: number;
  /** Bytes of an error response body kept for the attempt's error text. */
  errorBodyMaxBytes: number;
  /** Largest single SSE event accepted. */
  sseEventMaxChars: number;
  /** Largest output accepted from one stream. */
  outputMaxChars: number;
}

export interface AttemptTarget {
  transport: HttpTransport;
  protocol: ProviderProtocol;
  url: URL;
  apiKey: string;
  limits: AttemptLimits;
}

interface AttemptState {
  watchdog: AttemptWatchdog;
  decoder: StreamDecoder;
  /** A 2xx response started; losing the connection now is a mid-stream abort. */
  streaming: boolean;
  startedMs: number;
}

export async function runAttempt(
  target: AttemptTarget,
  req: DispatchRequest,
  signal: AbortSignal,
  onProgress?: () => void,
  onDelta?: (delta: DispatchDelta) => void,
): Promise<DispatchOutcome> {
  const state: AttemptState = {
    watchdog: new AttemptWatchdog(signal, req.timeout_ms, target.limits.idleTimeoutMs),
    decoder: target.protocol.createDecoder(target.limits.outputMaxChars, onDelta),
    streaming: false,
    startedMs: performance.now(),
  };
  try {
    const headers: Record<string, string> = {
      ...target.protocol.headers(target.apiKey),
      'content-type': 'application/json',
      accept: 'text/event-stream',
    };
    // W3C trace context to the provider (a no-op with tracing off): a tracing gateway in front of it joins the trace.
    propagation.inject(context.active(), headers);
    const res = await target.transport.post(target.url, headers, target.protocol.body(req), state.watchdog.signal);
    state.watchdog.touch();
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) return failed(state, await statusFailure(target, res, status));
    const contentType = String(res.headers['content-type'] ?? '');
    if (!contentType.includes('text/event-stream')) {
      res.destroy();
      return failed(state, {
        domain: 'model',
        settlement: 'unknown',
        error: `expected text/event-stream, got "${contentType}"`,
      });
    }
    state.streaming = true;
    const streamFailure = await consumeStream(res, state, target.limits, onProgress);
    if (streamFailure) return failed(state, streamFailure);
    if (!state.decoder.complete) {
      return failed(state, {
        domain: 'unknown',
        settlement: 'cancelled',
        error: 'stream closed before the provider signalled completion',
      });
    }
    const ok: DispatchOutcome = { kind: 'ok', output: state.decoder.output, latency_ms: elapsedMs(state) };
    if (state.decoder.usage) ok.usage = state.decoder.usage;
    const parts = state.decoder.parts;
    if (parts) ok.output_parts = parts as unknown as Readonly<Record<string, unknown>>[];
    if (state.decoder.stopReason) ok.stop_reason = state.decoder.stopReason;
    return ok;
  } catch (err) {
    return failed(state, classifyThrown(err, state));
  } finally {
    state.watchdog.dispose();
  }
}

async function consumeStream(
  res: IncomingMessage,
  state: AttemptState,
  limits: AttemptLimits,
  onProgress?: () => void,
): Promise<ClassifiedFailure | undefined> {
  const parser = new SseParser({ eventMaxChars: limits.sseEventMaxChars });
  // Leaving the loop must not destroy the response: after the terminal event the rest of the
  // body is drained so the keep-alive socket goes back to the pool.
  for await (const chunk of res.iterator({ destroyOnReturn: false })) {
    state.watchdog.touch();
    onProgress?.();
    for (const event of parser.push(chunk as Buffer)) {
      const failure = state.decoder.onEvent(event);
      if (failure) {
        res.destroy();
        return failure;
      }
    }
    if (state.decoder.terminated) {
      await finishBody(res);
      return undefined;
    }
  }
  for (const event of parser.end()) {
    const failure = state.decoder.onEvent(event);
    if (failure) return failure;
  }
  return undefined;
}

/**
 * After the terminal event the outcome is decided. Waiting briefly for the body to close lets
 * the keep-alive socket return to the pool before the next dispatch; a server that lingers is
 * cut off after the grace period rather than holding the attempt open.
 */
function finishBody(res: IncomingMessage): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      res.destroy();
      resolve();
    }, TERMINAL_GRACE_MS);
    res.on('error', () => undefined); // A late socket error changes nothing now.
    res.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    res.resume();
  });
}

async function statusFailure(target: AttemptTarget, res: IncomingMessage, status: number): Promise<ClassifiedFailure> {
  const body = await readBodyBounded(res, target.limits.errorBodyMaxBytes);
  const header = (name: string): string | undefined => {
    const value = res.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  return classifyHttpStatus(
    status,
    target.protocol.errorDetail(body),
    { retryAfter: header('retry-after'), retryAfterMs: header('retry-after-ms') },
    Date.now(),
  );
}

/** Which of the table's rows a thrown error belongs to; the watchdog's verdict comes first. */
function classifyThrown(err: unknown, state: AttemptState): ClassifiedFailure {
  switch (state.watchdog.reason) {
    case 'caller':
      return { domain: 'unknown', settlement: 'cancelled', error: 'aborted by caller' };
    case 'deadline':
      return {
        domain: 'deadline',
        settlement: 'unknown',
        error: `watchdog: no completion within ${state.watchdog.timeoutMs} ms`,
      };
    case 'idle':
      return {
        domain: 'deadline',
        settlement: 'unknown',
        error: `watchdog: no chunk for ${state.watchdog.idleTimeoutMs} ms`,
      };
    case undefined:
      break;
  }
  if (err instanceof StreamProtocolError || err instanceof SseOverflowError) {
    return { domain: 'model', settlement: 'unknown', error: `unparseable response: ${err.message}` };
  }
  if (state.streaming) {
    return { domain: 'unknown', settlement: 'cancelled', error: `stream aborted mid-stream: ${describeError(err)}` };
  }
  if (isNetworkError(err)) return { domain: 'network', settlement: 'unknown', error: describeError(err) };
  return { domain: 'unknown', settlement: 'unknown', error: describeError(err) };
}

function failed(state: AttemptState, failure: ClassifiedFailure): DispatchOutcome {
  const outcome: DispatchOutcome = { kind: 'error', ...failure, latency_ms: elapsedMs(state) };
  const partial = state.decoder.output;
  if (partial !== '') outcome.partial_output = partial;
  if (state.decoder.usage) outcome.usage = state.decoder.usage;
  return outcome;
}

function elapsedMs(state: AttemptState): number {
  return Math.round(performance.now() - state.startedMs);
}
