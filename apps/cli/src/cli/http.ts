// HTTP calls to the two services for the commands, with the caller's key as a bearer. Every
// failure becomes a CliError whose exit code says what kind it is and whose hint says what
// to do; the key never appears in a message.
import { CliError, ExitCode } from './exit-codes.js';
import type { GlobalOptions } from './program.js';

/** One request's bound: a page of receipts or a timeline read, never a long-running call. */
export const REQUEST_TIMEOUT_MS = 30_000;

export type Service = 'authority' | 'orchestrator';

/** Headers that sign one request (a bound capability's proof of possession), from what is sent. */
export type RequestSigner = (request: {
  readonly method: string;
  readonly path: string;
  readonly body: string;
}) => Promise<Record<string, string>>;

const SERVICE_NAMES: Record<Service, string> = {
  authority: 'budget-authority',
  orchestrator: 'agent-orchestrator',
};

const URL_FLAGS: Record<Service, string> = {
  authority: '--authority URL (or TALLY_AUTHORITY_URL)',
  orchestrator: '--orchestrator URL (or TALLY_ORCHESTRATOR_URL)',
};

export class TallyHttp {
  constructor(private readonly globals: GlobalOptions) {}

  get<T>(service: Service, path: string): Promise<T> {
    return this.call<T>(service, 'GET', path);
  }

  post<T>(service: Service, path: string, body?: unknown, sign?: RequestSigner): Promise<T> {
    return this.call<T>(service, 'POST', path, body, sign);
  }

  delete(service: Service, path: string): Promise<unknown> {
    return this.call(service, 'DELETE', path);
  }

  /** The response body as JSON (undefined for 204); anything but 2xx throws a CliError. */
  async call<T>(service: Service, method: string, path: string, body?: unknown, sign?: RequestSigner): Promise<T> {
    const base = service === 'authority' ? this.globals.authority : this.globals.orchestrator;
    const url = joinUrl(base, path);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.globals.key) headers['authorization'] = `Bearer ${this.globals.key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    // Serialized once: a signature covers the digest of exactly these bytes.
    const text = body === undefined ? undefined : JSON.stringify(body);
    // The path as the service sees it, under any prefix the base URL has.
    if (sign) Object.assign(headers, await sign({ method, path: pathOf(url), body: text ?? '' }));
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(text === undefined ? {} : { body: text }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new CliError(
        `could not reach the ${SERVICE_NAMES[service]} at ${redacted(base)} (${causeOf(error)})`,
        ExitCode.unavailable,
        `Is it running? Point to it with ${URL_FLAGS[service]}.`,
      );
    }
    const answer = await response.text();
    if (response.ok) return (answer === '' ? undefined : parseJson(answer, service)) as T;
    throw httpFailure(service, method, path, response.status, answer);
  }
}

function httpFailure(service: Service, method: string, path: string, status: number, text: string): CliError {
  const problem = problemOf(text);
  const what = `${method} ${path.split('?')[0]} answered ${status}${problem ? `: ${problem}` : ''}`;
  if (status === 401)
    return new CliError(what, ExitCode.refused, 'Pass an operator key (or capability token) with --key or TALLY_KEY.');
  if (status === 403)
    return new CliError(
      what,
      ExitCode.refused,
      "This credential's role may not do this; use a key with the right role.",
    );
  if (status === 404) return new CliError(what, ExitCode.notFound, 'Check the id, and that your key can see it.');
  if (status === 400 || status === 422) return new CliError(what, ExitCode.usage);
  if (status >= 500)
    return new CliError(what, ExitCode.unavailable, `The ${SERVICE_NAMES[service]} could not answer; try again later.`);
  return new CliError(what, ExitCode.failed);
}

/** The title and field errors of a problem+json body, or its first line otherwise. */
function problemOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { title?: unknown; detail?: unknown; errors?: unknown };
    const errors = Array.isArray(body.errors)
      ? body.errors
          .map((e: { field?: unknown; message?: unknown }) => [e.field, e.message].filter(Boolean).join(': '))
          .filter(Boolean)
      : [];
    const parts = [body.title, body.detail, ...errors].filter((p): p is string => typeof p === 'string' && p !== '');
    return parts.length > 0 ? parts.join('; ') : undefined;
  } catch {
    return text.split('\n')[0]?.slice(0, 200) || undefined;
  }
}

function parseJson(text: string, service: Service): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(
      `the ${SERVICE_NAMES[service]} answered with something that is not JSON`,
      ExitCode.unavailable,
      `Check that ${URL_FLAGS[service]} points to it.`,
    );
  }
}

function pathOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return url;
  }
}

function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

/** A URL without its credentials, for messages. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return 'the given URL';
  }
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS} ms`;
  return error instanceof Error ? error.message : String(error);
}
