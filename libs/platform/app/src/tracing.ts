// OpenTelemetry traces (issue 12 item 5), off unless `tracing.otlp_endpoint` is set: the
// SDK with the OTLP/HTTP exporter and W3C trace context, one span per HTTP request (the
// caller's `traceparent` continued), and the spans of the NATS paths (platform-jetstream's
// trace context: queue messages, commands, appends) under it. No auto-instrumentation:
// the spans are the ones an operator reads a request by, not one per library call.
import { context, propagation, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT } from '@opentelemetry/api';
import type { TracingConfig } from './config.schema.js';

export interface Tracing {
  readonly enabled: boolean;
  /** Exports what is buffered and stops; a no-op when tracing is off. */
  shutdown(): Promise<void>;
}

const OFF: Tracing = { enabled: false, shutdown: async () => undefined };
/** Bounds on what waits for export: a collector that is down costs memory up to this, then spans are dropped. */
const QUEUE_SPANS_MAX = 4_096;
const BATCH_SPANS_MAX = 512;
const EXPORT_TIMEOUT_MS = 10_000;

/** Starts the SDK when configured; its modules are loaded only then (they cost a boot with tracing off otherwise). */
export async function startTracing(config: TracingConfig, service: string, instanceId: string): Promise<Tracing> {
  if (!config.otlp_endpoint) return OFF;
  const [{ W3CTraceContextPropagator }, { OTLPTraceExporter }, { resourceFromAttributes }, { NodeSDK }, sdkTrace] =
    await Promise.all([
      import('@opentelemetry/core'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/sdk-trace'),
    ]);
  const { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } = sdkTrace;
  const exporter = new OTLPTraceExporter({ url: config.otlp_endpoint, timeoutMillis: EXPORT_TIMEOUT_MS });
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': service, 'service.instance.id': instanceId }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        maxQueueSize: QUEUE_SPANS_MAX,
        maxExportBatchSize: BATCH_SPANS_MAX,
        scheduledDelayMillis: config.export_delay_ms,
        exportTimeoutMillis: EXPORT_TIMEOUT_MS,
      }),
    ],
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
    textMapPropagator: new W3CTraceContextPropagator(),
    instrumentations: [],
    autoDetectResources: false,
  });
  sdk.start();
  return { enabled: true, shutdown: () => sdk.shutdown() };
}

interface RequestLike {
  readonly method?: string;
  readonly url?: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly route?: { readonly path?: string };
}
interface ResponseLike {
  readonly statusCode: number;
  once(event: 'finish' | 'close', listener: () => void): void;
}

/**
 * Express middleware: a SERVER span per request, continuing the caller's `traceparent`,
 * active while the request is handled (so the commands, appends and logs it causes are in
 * it), named by the route template once it is known (`POST /v1/work`, never an id).
 */
export function httpSpans(quietPaths: ReadonlySet<string>) {
  const tracer = trace.getTracer('tally');
  return (req: RequestLike, res: ResponseLike, next: () => void): void => {
    const path = (req.url ?? '').split('?')[0]!;
    if (quietPaths.has(path)) return next();
    const parent = propagation.extract(ROOT_CONTEXT, req.headers, {
      get: (headers, key) => {
        const value = headers[key];
        return Array.isArray(value) ? value[0] : value;
      },
      keys: (headers) => Object.keys(headers),
    });
    const span = tracer.startSpan(`${req.method} request`, { kind: SpanKind.SERVER }, parent);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const route = req.route?.path ?? 'unmatched';
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({
        'http.request.method': req.method ?? '',
        'http.route': route,
        'http.response.status_code': res.statusCode,
      });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    context.with(trace.setSpan(parent, span), next);
  };
}
