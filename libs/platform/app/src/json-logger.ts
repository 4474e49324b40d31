// Structured JSON logs, one object a line, for both Nest's own messages and ours, written
// by pino. The shape operators rely on stays as it was: `time` (RFC 3339), `level` (a
// name), `service`, `msg`, then the fields; `trace_id` and `span_id` when a trace is
// active. Every record passes the redaction of log-redaction.ts on its way out: fields,
// child bindings (the request of an HTTP log), serialized errors and the message text.
import type { LoggerService } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactText, redactValue } from './log-redaction.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Where lines go: stdout by default, or a function (tests). */
export type LogSink = (line: string) => void;

export class JsonLogger implements LoggerService {
  /** The pino instance behind this logger; nestjs-pino's request logging writes through it. */
  readonly pino: Logger;

  constructor(
    readonly service: string,
    readonly minLevel: LogLevel = 'info',
    write?: LogSink,
  ) {
    this.pino = createPino(service, minLevel, write);
  }

  log(message: unknown, ...rest: unknown[]) {
    this.emit('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.emit('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.emit('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    this.emit('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    this.emit('debug', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]) {
    this.emit('error', message, rest);
  }

  /** Our own structured entry point: a message plus fields. */
  event(level: LogLevel, msg: string, fields: Record<string, unknown> = {}) {
    this.pino[level](fields, msg);
  }

  private emit(level: LogLevel, message: unknown, rest: unknown[]) {
    if (!this.pino.isLevelEnabled(level)) return;
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const fields: Record<string, unknown> = context ? { context } : {};
    if (message instanceof Error) {
      fields['error'] = message.message;
      fields['stack'] = message.stack;
    } else if (message !== null && typeof message === 'object') {
      Object.assign(fields, message);
    }
    const text = message instanceof Error ? message.message : typeof message === 'string' ? message : '';
    this.event(level, text, fields);
  }
}

function createPino(service: string, level: LogLevel, write: LogSink | undefined): Logger {
  const destination: DestinationStream = write
    ? { write: (line: string) => write(line.endsWith('\n') ? line.slice(0, -1) : line) }
    : // Synchronous writes: a line logged just before an exit is never lost.
      pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level,
      base: { service },
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        bindings: (bindings) => redactValue(bindings) as Record<string, unknown>,
        log: (record) => redactValue(record) as Record<string, unknown>,
      },
      // Child bindings (pino-http's request) bypass formatters.log; they pass these serializers.
      serializers: {
        err: (error: unknown) => redactValue(error),
        req: requestOfLog,
      },
      hooks: {
        // The message text is scrubbed like any field: a URL or a key can hide in it too.
        logMethod(args, method) {
          const scrubbed = args.map((arg) => (typeof arg === 'string' ? redactText(arg) : arg));
          return method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
      mixin: traceFields,
    },
    destination,
  );
}

/** The fields of an HTTP request worth a log line; the headers stay out (they carry credentials). */
export function requestOfLog(req: { id?: unknown; method?: string; url?: string }) {
  return { id: req.id, method: req.method, url: redactText(req.url ?? '') };
}

/** Correlates a line with its trace: the active span's ids, when tracing is on and a span is active. */
function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
