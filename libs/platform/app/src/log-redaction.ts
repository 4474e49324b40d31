// What never reaches a log line: credentials. The logger applies this to every record it
// writes (fields, child bindings, serialized requests and errors, and the message text),
// so a secret is caught whichever way it travels: under a key that names a secret
// (authorization, x-api-key, token, password, …), inside a URL (user:pass@, ?token=), or
// as a recognisable value (a Bearer credential, an operator or admin key, a capability
// token, a JWT, a webhook secret).

export const REDACTED = '[redacted]';

/** Keys whose value is a secret, whatever it looks like. Public keys and key ids are not. */
const SECRET_KEY =
  /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api[-_]?key|apikey|token|[a-z0-9_-]*[-_]token|secret|[a-z0-9_-]*[-_]secret|password|passwd|pass|[a-z0-9_-]*[-_]password|key|private[-_]?key|signing[-_]?key|admin[-_]?key|seed|nkey|creds|credentials|jwt|admission_proof|execution_nonce)$/i;
const NOT_SECRET_KEY = /(^|[-_])(public[-_]?key|key[-_]?id|token[-_]?fingerprint|key[-_]?env)$/i;

/** Values that are credentials wherever they appear in a string. */
const SECRET_VALUES: readonly [RegExp, string][] = [
  // userinfo of any URL: nats://user:pass@host, https://token@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, `$1${REDACTED}@`],
  // secret-named query parameters
  [
    /([?&;](?:access_token|id_token|refresh_token|token|api[-_]?key|key|secret|password|pass|auth|code|signature|sig)=)[^&\s#"']+/gi,
    `$1${REDACTED}`,
  ],
  [/\b(Bearer|Basic)\s+[^\s"',]+/gi, `$1 ${REDACTED}`],
  // operator keys keep their key id (safe, and it says which key), never the secret part
  [/\b(tally_key_[0-9a-f]{16}_)[A-Za-z0-9_-]+/g, `$1${REDACTED}`],
  [/\btally_admin_[A-Za-z0-9_-]+/g, `tally_admin_${REDACTED}`],
  [/\bc1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, `c1.${REDACTED}`],
  [/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, `jwt.${REDACTED}`],
  [/\bwhsec_[A-Za-z0-9+/=_-]+/g, `whsec_${REDACTED}`],
];

/** Bounds of one record's walk: a log call with a huge object is cut, never slow. */
const DEPTH_MAX = 8;
const VALUES_MAX = 2_000;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !NOT_SECRET_KEY.test(key);
}

export function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_VALUES) out = out.replace(pattern, replacement);
  return out;
}

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
