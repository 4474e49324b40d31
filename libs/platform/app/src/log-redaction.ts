// What never reaches a log line: credentials. The logger applies this to every record it
// writes (fields, child bindings, serialized requests and errors, and the message text),
// so a secret is caught whichever way it travels: under a key that names a secret
// (authorization, x-api-key, token, password, …), inside a URL (user:pass@, ?token=), or
// as a recognisable value (a Bearer credential, an operator or admin key, a capability
// token, a JWT, a webhook secret).

import { isSecretKey, REDACTED, redactText } from '@tally/contracts';

export { isSecretKey, REDACTED, redactText };

/** Bounds of one record's walk: a log call with a huge object is cut, never slow. */
const DEPTH_MAX = 8;
const VALUES_MAX = 2_000;

/**
 * A copy of `value` fit for a log: secret-named keys replaced, strings scrubbed, bigints as
 * decimal strings (as the logger always wrote them), errors as message and stack, cycles
 * and anything past the bounds cut with a marker.
 */
export function redactValue(value: unknown): unknown {
  const budget = { values: VALUES_MAX };
  return redactAt(value, 0, budget, new WeakSet());
}

function redactAt(value: unknown, depth: number, budget: { values: number }, seen: WeakSet<object>): unknown {
  if (--budget.values < 0) return '[truncated]';
  if (typeof value === 'string') return redactText(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= DEPTH_MAX) return '[truncated]';
  seen.add(value);
  if (value instanceof Error) {
    const error: Record<string, unknown> = { type: value.name, message: redactText(value.message) };
    if (value.stack) error['stack'] = redactText(value.stack);
    return error;
  }
  if (Array.isArray(value)) return value.map((item) => redactAt(item, depth + 1, budget, seen));
  if (value instanceof Date) return value.toISOString();
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    out[key] =
      isSecretKey(key) && child !== undefined && child !== null ? REDACTED : redactAt(child, depth + 1, budget, seen);
  }
  return out;
}
