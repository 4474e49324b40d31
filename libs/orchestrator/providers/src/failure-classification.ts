// Maps what went wrong on one attempt to (domain, settlement), exactly as the table in the
// agent-orchestrator spec says. Settlement follows "absent is unknown, never zero": whenever
// the provider may have started generating (and billing), the settlement is 'unknown'.
import type { FailureDomain, Settlement } from './provider-gateway.types.js';

export interface ClassifiedFailure {
  domain: FailureDomain;
  settlement: Settlement;
  error: string;
  retry_after_ms?: number;
  /** The provider's HTTP status, when the failure was an HTTP answer: it tells auth from rate limits. */
  http_status?: number;
}

/** Socket, DNS and TLS error codes that mean "the request may or may not have reached the provider". */
const NETWORK_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Classifies a non-2xx response. `retryAfter` is the raw Retry-After header (seconds or an
 * HTTP date); `retryAfterMs` is OpenAI's non-standard `retry-after-ms` header, preferred when
 * present because it is more precise.
 */
export function classifyHttpStatus(
  status: number,
  detail: string,
  headers: { retryAfter?: string | undefined; retryAfterMs?: string | undefined },
  nowMs: number,
): ClassifiedFailure {
  return { ...classifyStatus(status, detail, headers, nowMs), http_status: status };
}

function classifyStatus(
  status: number,
  detail: string,
  headers: { retryAfter?: string | undefined; retryAfterMs?: string | undefined },
  nowMs: number,
): ClassifiedFailure {
  const error = detail ? `HTTP ${status}: ${detail}` : `HTTP ${status}`;
  const withRetryAfter = (failure: ClassifiedFailure): ClassifiedFailure => {
    const retry = parseRetryAfterMsHeader(headers.retryAfterMs) ?? parseRetryAfterMs(headers.retryAfter, nowMs);
    return retry === undefined ? failure : { ...failure, retry_after_ms: retry };
  };
  if (status === 401 || status === 403) return { domain: 'account', settlement: 'failed', error };
  if (status === 429) return withRetryAfter({ domain: 'account', settlement: 'failed', error });
  // Overload responses often carry Retry-After too; honouring it costs nothing.
  if (status === 503 || status === 529) return withRetryAfter({ domain: 'provider', settlement: 'failed', error });
  if (status === 400 || status === 404 || status === 422) return { domain: 'request', settlement: 'failed', error };
  if (status >= 500) return { domain: 'request', settlement: 'unknown', error };
  // Other 4xx (408, 409, 413, …) are refusals before any generation, so nothing was billed.
  if (status >= 400) return { domain: 'request', settlement: 'failed', error };
  // 1xx/3xx: not the stream we asked for and we cannot tell what happened upstream.
  return { domain: 'request', settlement: 'unknown', error };
}

/**
 * Parses Retry-After: delta-seconds (RFC 9110) or an HTTP date. Fractional seconds are
 * accepted because some OpenAI-compatible servers send them. Returns undefined when absent
 * or unreadable, so the caller falls back to its own backoff.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  // Every HTTP date format names the month, and Date.parse alone would read "-5" as a year.
  if (!/[A-Za-z]{3}/.test(trimmed)) return undefined;
  const dateMs = Date.parse(trimmed);
  if (Number.isNaN(dateMs)) return undefined;
  return Math.max(0, dateMs - nowMs);
}

function parseRetryAfterMsHeader(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+(\.\d+)?$/.test(value.trim())) return undefined;
  return Math.ceil(Number(value.trim()));
}

export function isNetworkError(err: unknown): boolean {
  const code = errorCode(err);
  return code !== undefined && NETWORK_ERROR_CODES.has(code);
}

export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // fetch/undici wrap socket errors in `cause`; keep working if a transport ever does.
  return errorCode((err as { cause?: unknown }).cause);
}

export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = errorCode(err);
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}
