// W3C trace context on NATS messages (issue 12 item 5): every message Tally publishes while
// a span is active carries `traceparent` (and `tracestate`), and a consumer continues the
// trace from the message it received. The OpenTelemetry API is a no-op until a service
// starts the SDK (tracing is off unless configured), so with tracing off nothing is added.
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { MsgHdrs } from '@nats-io/nats-core';

export { SpanKind } from '@opentelemetry/api';

const setter = {
  set(carrier: MsgHdrs, key: string, value: string) {
    carrier.set(key, value);
  },
};

const getter = {
  get(carrier: MsgHdrs | undefined, key: string) {
    const value = carrier?.get(key);
    return value === undefined || value === '' ? undefined : value;
  },
  keys(carrier: MsgHdrs | undefined) {
    return carrier ? carrier.keys() : [];
  },
};

/** Adds the active trace context to a message's headers (nothing when no span is active). */
export function injectTrace(hdrs: MsgHdrs, ctx: Context = context.active()): MsgHdrs {
  propagation.inject(ctx, hdrs, setter);
  return hdrs;
}

/** The trace context a message carries, to continue its trace; the root context when it carries none. */
export function traceContextOf(hdrs: MsgHdrs | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, hdrs, getter);
}

/** The active span's `traceparent`, for transports that take it as a string. */
export function activeTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier['traceparent'];
}

/** A context whose parent is the given `traceparent` string (the root context when absent or malformed). */
export function traceContextOfTraceparent(traceparent: string | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

export interface SpanOptions {
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
  /** The parent: a context from a message or a request; the active context by default. */
  readonly parent?: Context;
}

/**
 * Runs `work` in a new active span, so whatever it publishes and logs carries this span. The
 * span records a thrown error and ends either way.
 */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const tracer = trace.getTracer('tally');
  return tracer.startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) },
    options.parent ?? context.active(),
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
