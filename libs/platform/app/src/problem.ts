// HTTP errors as application/problem+json (RFC 9457) with an `errors` list naming each
// bad field. Rejected input is also handed to a sink, which the apps point at the
// dead-letter stream, so bad requests are visible to operators and never lost; a refusal
// past its source's or credential's limit is answered 429 instead, and not sunk (ADR 0050).
import {
  ArgumentsHost,
  Catch,
  HttpException,
  HttpStatus,
  type ExceptionFilter,
  type ValidationPipe,
} from '@nestjs/common';
import { flattenValidationErrors, onlyOutOfRange, type FieldError } from '@tally/contracts';
import { StreamFull } from '@tally/eventing';
import { FastValidationPipe, ProblemException } from '@tally/platform-nest';

export { ProblemException };

export function problemValidationPipe(): ValidationPipe {
  return new FastValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    exceptionFactory: (errors) =>
      onlyOutOfRange(errors)
        ? new RejectedInput(422, 'amount_out_of_range', OUT_OF_RANGE_TITLE, flattenValidationErrors(errors))
        : new RejectedInput(400, 'validation', 'The request is invalid', flattenValidationErrors(errors)),
  });
}

const OUT_OF_RANGE_TITLE = 'A value lies outside the range of an amount, 0 to 2^63-1';

/** Input the validation pipe refused: handed to the rejection sink whatever its status. */
class RejectedInput extends ProblemException {}

export interface RejectedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
  /** The body's bytes as received, when the parser read them. */
  readonly raw: Uint8Array | undefined;
  /** Whether the access guard verified a credential before the refusal (else the input is a stranger's). */
  readonly verified: boolean;
  readonly status: number;
  readonly errors: readonly FieldError[];
}

export type RejectionSink = (rejected: RejectedRequest) => Promise<void>;

/** Counts a refusal about to be answered with `status`; the 429 to answer instead when it is one too many. */
export type RefusalCounter = (req: HttpRequestLike, status: number) => ProblemException | undefined;

interface HttpRequestLike {
  method: string;
  originalUrl?: string;
  url: string;
  body?: unknown;
  rawBody?: Buffer;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Set by the access guard on every route that is not public. */
  principal?: { readonly kind: string };
}
interface HttpResponseLike {
  status(code: number): HttpResponseLike;
  setHeader(name: string, value: string): unknown;
  type(mime: string): HttpResponseLike;
  send(body: string): void;
}

@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(
    private readonly sink?: RejectionSink,
    private readonly onUnexpected?: (error: unknown) => void,
    private readonly refusals?: RefusalCounter,
  ) {}

  async catch(exception: unknown, host: ArgumentsHost) {
    const http = host.switchToHttp();
    const req = http.getRequest<HttpRequestLike>();
    const res = http.getResponse<HttpResponseLike>();
    const problem = toProblem(exception);
    // A ProblemException is an answer the code chose (a quarantined aggregate's 503 is logged once, by its projector).
    if (problem.status >= 500 && !(exception instanceof ProblemException)) this.onUnexpected?.(exception);
    const limited = this.refusals?.(req, problem.status);
    if (limited) return send(res, limited, toProblem(limited));
    if ((exception instanceof RejectedInput || problem.status === 400 || problem.status === 413) && this.sink) {
      const rejected: RejectedRequest = {
        method: req.method,
        path: req.originalUrl ?? req.url,
        body: req.body,
        raw: req.rawBody,
        verified: req.principal !== undefined && req.principal.kind !== 'anonymous',
        status: problem.status,
        errors: problem.errors,
      };
      await this.sink(rejected).catch((error: unknown) => this.onUnexpected?.(error));
    }
    send(res, exception, problem);
  }
}

function send(res: HttpResponseLike, exception: unknown, problem: Problem): void {
  if (exception instanceof ProblemException)
    for (const [name, value] of Object.entries(exception.headers)) res.setHeader(name, value);
  res.status(problem.status).type('application/problem+json').send(JSON.stringify(problem));
}

/** The JSON Schema of a Problem, for both services' OpenAPI documents. */
export const PROBLEM_JSON_SCHEMA = {
  type: 'object',
  required: ['type', 'title', 'status', 'errors'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['field', 'message'],
        properties: { field: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
} as const;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors: readonly FieldError[];
}

export function toProblem(exception: unknown): Problem {
  // A full ledger or queue refused the write and stored nothing (ADR 0002): say so, never "internal error".
  if (exception instanceof StreamFull)
    return { type: 'stream_full', title: 'A Tally stream is full', status: 507, detail: exception.message, errors: [] };
  if (exception instanceof ProblemException) {
    const p: Problem = {
      type: exception.problemType,
      title: exception.title,
      status: exception.getStatus(),
      errors: exception.errors,
    };
    if (exception.detail) p.detail = exception.detail;
    return p;
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const type =
      status === 404 ? 'not_found' : status === 400 ? 'bad_request' : status === 409 ? 'conflict' : 'http_error';
    const body = exception.getResponse();
    const message =
      typeof body === 'object' && body && 'message' in body
        ? String((body as { message: unknown }).message)
        : exception.message;
    // Body parser failures (malformed JSON) arrive as plain 400s: name the body as the field.
    if (status === 413) return tooLarge(exception);
    const errors = status === 400 ? [{ field: '$', message }] : [];
    return { type, title: exception.message, status, errors };
  }
  return { type: 'internal', title: 'Internal error', status: HttpStatus.INTERNAL_SERVER_ERROR, errors: [] };
}

/** A body above the limit (ADR 0016): refused unread, naming its size and the limit. */
function tooLarge(exception: HttpException): Problem {
  const cause = exception.cause as { length?: unknown; limit?: unknown } | undefined;
  const size = typeof cause?.length === 'number' ? `${cause.length} bytes` : 'larger than the limit';
  const limit = typeof cause?.limit === 'number' ? ` of ${cause.limit} bytes` : '';
  return {
    type: 'payload_too_large',
    title: 'The request body is too large',
    status: 413,
    errors: [{ field: '$', message: `the body is ${size}, above the limit${limit}` }],
  };
}
