// Structured JSON logs, one object a line, for both Nest's own messages and ours.
import type { LoggerService } from '@nestjs/common';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LEVELS;

export class JsonLogger implements LoggerService {
  constructor(
    private readonly service: string,
    private readonly minLevel: LogLevel = 'info',
    private readonly write: (line: string) => void = (line) => process.stdout.write(line + '\n'),
  ) {}

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

  /** Our own structured entry point: a message plus fields. */
  event(level: LogLevel, msg: string, fields: Record<string, unknown> = {}) {
    if (LEVELS[level] < LEVELS[this.minLevel]) return;
    this.write(
      JSON.stringify({ time: new Date().toISOString(), level, service: this.service, msg, ...fields }, jsonSafe),
    );
  }

  private emit(level: LogLevel, message: unknown, rest: unknown[]) {
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

function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
