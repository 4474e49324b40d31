// Errors on the drop-in endpoints come in the dialect's own shape, not problem+json: this
// filter is bound to their controllers, so it also catches what the access guard throws for
// them (401 with WWW-Authenticate, 403, 503) and what validation or a bug throws.
import { HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { kindOfStatus, type DialectErrorResponse, type NeutralError } from '@tally/orchestrator-dialects';
import { ProblemException } from '@tally/platform-app';
import type { DialectWriter } from './dialect-writer.js';
import type { Response } from './express-response.js';

export function neutralErrorOf(exception: unknown): NeutralError {
  if (exception instanceof ProblemException) {
    const first = exception.errors[0];
    const retry = exception.headers['retry-after'];
    const status = exception.getStatus();
    return {
      kind: kindOfStatus(status),
      message: exception.detail ?? (first ? `${first.field}: ${first.message}` : exception.title),
      // Why a credential was refused (token_revoked, signature_replayed, …) is the dialect's code.
      ...(status === 401 ? { code: exception.problemType } : {}),
      ...(first ? { field: first.field } : {}),
      ...(retry !== undefined && Number.isFinite(Number(retry)) ? { retry_after_ms: Number(retry) * 1000 } : {}),
    };
  }
  if (exception instanceof HttpException)
    return { kind: kindOfStatus(exception.getStatus()), message: exception.message };
  return { kind: 'internal', message: 'internal error' };
}

export function sendDialectError(res: Response, error: DialectErrorResponse): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.status(error.status).set(error.headers).json(error.body);
}

export class DialectExceptionFilter implements ExceptionFilter {
  constructor(
    private readonly writer: DialectWriter,
    private readonly onFault: (error: unknown) => void = () => undefined,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (!(exception instanceof HttpException)) this.onFault(exception);
    sendDialectError(host.switchToHttp().getResponse<Response>(), this.writer.error(neutralErrorOf(exception)));
  }
}
