// The refusal limit at the HTTP door (ADR 0050). Before the body is read, a request whose
// source or credential has no refusal left is answered 429 with retry-after, and nothing
// else happens: no parse, no credential check, no dead letter. Every other request is let
// through; if it ends refused, the refusal is counted, and one past the limit is answered 429
// instead of its refusal (so it is not dead-lettered either).
import { presentedCredential, type RequestLike } from '@tally/platform-auth';
import { tokenFingerprint } from '@tally/contracts';
import { ProblemException, toProblem } from './problem.js';
import {
  isCountedRefusal,
  refusalsLimited,
  RefusalLimiter,
  sourceOf,
  type Limited,
  type RefusalKeys,
} from './refusal-limit.js';
import type { HttpConfig } from './http-config.js';

const STATE = Symbol('refusal-state');

interface GateRequest extends RequestLike {
  readonly ip?: string;
  readonly socket?: { readonly remoteAddress?: string };
  readonly url: string;
  [STATE]?: RefusalState;
}

interface GateResponse {
  statusCode: number;
  on(event: 'finish', listener: () => void): unknown;
  setHeader(name: string, value: string): unknown;
  status(code: number): GateResponse;
  type(mime: string): GateResponse;
  send(body: string): unknown;
}

interface RefusalState {
  readonly source: string;
  readonly credential: string | undefined;
  /** Whether this request's refusal was already counted (by the problem filter). */
  charged: boolean;
}

/** The secret a request presents, as the access guard would read it; a malformed one is none. */
function credentialKeyOf(req: RequestLike, bodyTokenAllowed: boolean): string | undefined {
  const presented = presentedCredential(req, bodyTokenAllowed);
  if (presented === undefined || 'malformed' in presented) return undefined;
  const c = presented.credential;
  return tokenFingerprint(c.kind === 'operator_key' || c.kind === 'opaque' ? c.secret : c.token);
}

export function refusalLimiterOf(config: HttpConfig): RefusalLimiter {
  return new RefusalLimiter({
    refusalsPerMinuteMax: config.refusals_per_minute_max,
    sourcesMax: config.refusal_sources_max,
    credentialsMax: config.refusal_credentials_max,
  });
}

/** The 429 a limited request gets: problem+json, retry-after in whole seconds. */
export function tooManyRefusals(limited: Limited, perMinuteMax: number): ProblemException {
  const seconds = Math.max(1, Math.ceil(limited.retryAfterMs / 1000));
  return new ProblemException(
    429,
    'too_many_refusals',
    'Too many refused requests',
    [],
    `more than ${perMinuteMax} requests a minute from this ${limited.by === 'source' ? 'address' : 'credential'} were refused; retry after ${seconds} s`,
    { 'retry-after': String(seconds) },
  );
}

export class RefusalGate {
  constructor(
    private readonly limiter: RefusalLimiter,
    /** Paths never limited: probes and scrapers must see the service as it is. */
    private readonly exemptPaths: ReadonlySet<string>,
  ) {}

  /** Express middleware, mounted before the body parser. */
  middleware(): (req: GateRequest, res: GateResponse, next: () => void) => void {
    return (req, res, next) => {
      if (this.exemptPaths.has(req.url.split('?')[0]!)) return next();
      const state: RefusalState = {
        source: sourceOf(req.ip ?? req.socket?.remoteAddress),
        credential: credentialKeyOf(req, false),
        charged: false,
      };
      req[STATE] = state;
      const limited = this.limiter.limited(state);
      if (limited) return this.send(res, limited);
      // A refusal that does not pass the problem filter (a handler writing its own 4xx) still counts.
      res.on('finish', () => {
        if (!state.charged && isCountedRefusal(res.statusCode)) this.limiter.charge(state);
      });
      next();
    };
  }

  /**
   * For the problem filter, when a request is about to be refused with `status`: counts it
   * (with the body's token, now parsed, as its credential if no header carried one) and
   * returns the 429 to answer instead when it is one refusal too many.
   */
  refuse(req: RequestLike, status: number): ProblemException | undefined {
    const state = (req as GateRequest)[STATE];
    if (state === undefined || state.charged || !isCountedRefusal(status)) return undefined;
    state.charged = true;
    const keys: RefusalKeys = { source: state.source, credential: state.credential ?? credentialKeyOf(req, true) };
    const limited = this.limiter.charge(keys);
    if (!limited) return undefined;
    refusalsLimited.inc({ by: limited.by });
    return tooManyRefusals(limited, this.limiter.limits.refusalsPerMinuteMax);
  }

  private send(res: GateResponse, limited: Limited): void {
    refusalsLimited.inc({ by: limited.by });
    const exception = tooManyRefusals(limited, this.limiter.limits.refusalsPerMinuteMax);
    for (const [name, value] of Object.entries(exception.headers)) res.setHeader(name, value);
    res
      .status(429)
      .type('application/problem+json')
      .send(JSON.stringify(toProblem(exception)));
  }
}
