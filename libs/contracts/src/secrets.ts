// What a credential looks like, for every place that must never keep one: log records
// (libs/platform/app log-redaction) and dead letters (libs/platform/jetstream). A secret is
// recognised by the key it sits under (authorization, x-api-key, token, password, …) or by
// its shape wherever it appears in a string: URL userinfo and secret query parameters, a
// Bearer credential, an operator or admin key, a capability token, a JWT, a webhook secret.

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

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !NOT_SECRET_KEY.test(key);
}

export function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_VALUES) out = out.replace(pattern, replacement);
  return out;
}
