// Errors in each dialect's own shape, with the status and headers its SDK understands:
// OpenAI `{error:{message, type, param, code}}`, Anthropic `{type:"error", error:{type, message}}`.
import type { Dialect, ErrorKind, JsonObject, NeutralError } from './neutral.types.js';
import { ERROR_TABLE } from './tables.js';

export interface DialectErrorResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: JsonObject;
}

export function dialectError(dialect: Dialect, error: NeutralError): DialectErrorResponse {
  const row = ERROR_TABLE[error.kind];
  const headers: Record<string, string> = {};
  if (error.kind === 'auth') headers['www-authenticate'] = 'Bearer';
  if (error.retry_after_ms !== undefined) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(error.retry_after_ms / 1000)));
    headers['retry-after-ms'] = String(Math.max(0, Math.round(error.retry_after_ms)));
  }
  // Both SDKs obey this header before their status rules: a refusal is final, a rate limit is worth a retry.
  if (row.status < 500 && error.kind !== 'rate_limited') headers['x-should-retry'] = 'false';
  const body: JsonObject =
    dialect === 'openai'
      ? { error: { message: error.message, type: row.openai, param: error.field ?? null, code: error.code ?? null } }
      : { type: 'error', error: { type: row.anthropic, message: error.message } };
  return { status: row.status, headers, body };
}

/**
 * The authority's deny reason as a code: a reason that already is one (`rate_limited`) stays,
 * a sentence ("requested cost exceeds max_cost_per_invocation") becomes its snake_case slug.
 */
export function reasonCode(reason: string): string {
  const slug = reason
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  return slug === '' ? 'denied' : slug;
}

/** The kind of an authority deny reason (as a code): a rate limit is 429; a credential that stopped verifying is 401; any other refusal is the budget's. */
export function kindOfDenyReason(reason: string): ErrorKind {
  if (reason === 'rate_limited') return 'rate_limited';
  if (reason === 'capability_revoked' || reason === 'capability_expired' || reason === 'capability_unknown')
    return 'auth';
  return 'budget';
}

/** The kind of an HTTP status from an access check (the guard's problem+json statuses). */
export function kindOfStatus(status: number): ErrorKind {
  if (status === 400 || status === 422) return 'invalid_request';
  if (status === 401) return 'auth';
  if (status === 402) return 'budget';
  if (status === 403) return 'permission';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 429) return 'rate_limited';
  if (status === 503) return 'overloaded';
  return 'internal';
}
