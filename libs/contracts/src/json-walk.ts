// Bounded walks over parsed JSON values, shared by the checks that must look inside a
// body before it is trusted or stored (a "__proto__" key, a credential to redact).
import { createHash } from 'node:crypto';

/** A capability token's fingerprint: sha256, base64url without padding (43 characters). ADR 0007. */
export function tokenFingerprint(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

export type JsonNode = Record<string, unknown> | unknown[];

/**
 * Visits every object and array inside `value`, depth first, with its path (`$`, `$.a`,
 * `$.a[0]`), before its children are read, so a visitor may replace a child. Stops when
 * `visit` returns false; 'too_large' when more than `valuesMax` values would be looked at.
 */
export function walkJson(
  value: unknown,
  valuesMax: number,
  visit: (node: JsonNode, path: string) => boolean | void,
): 'done' | 'stopped' | 'too_large' {
  const stack: { value: unknown; path: string }[] = [{ value, path: '$' }];
  for (let seen = 0; stack.length > 0; seen++) {
    if (seen >= valuesMax) return 'too_large';
    const { value: current, path } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    const node = current as JsonNode;
    if (visit(node, path) === false) return 'stopped';
    const array = Array.isArray(node);
    for (const [key, child] of Object.entries(node))
      stack.push({ value: child, path: array ? `${path}[${key}]` : `${path}.${key}` });
  }
  return 'done';
}
