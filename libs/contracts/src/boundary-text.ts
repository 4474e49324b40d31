// Text every boundary refuses before it is validated further, stored or hashed (ADR 0016):
// NUL bytes and unpaired UTF-16 surrogates, which PostgreSQL rejects (one such string in an
// event would halt a projection for good), and JSON nested deeper than anything Tally
// accepts (a recursive hash or canonical form would overflow the stack on it). Prototype
// keys are refused too (ADR 0052): the validation pipe would delete them silently, so the
// object a handler hashes or dispatches would differ from the one the caller sent.
import type { FieldError } from './validation.js';

/** How deep any request or command body may nest. */
export const BODY_DEPTH_MAX = 64;
/** How deep `parameters` may nest before it is hashed (Admit). */
export const PARAMETERS_DEPTH_MAX = 32;
/** Values looked at per body; past this many the walk stops (the size limits bound bodies anyway). */
const VALUES_MAX = 1_000_000;
const ERRORS_MAX = 16;

/** Keys that name an object's prototype machinery; a body that has one anywhere is refused. */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with one string, or undefined. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'must not contain an unpaired UTF-16 surrogate (U+D800..U+DFFF)';
  return undefined;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/**
 * Every bad string (value or key) in `value`, every prototype key, and every place it nests past `depthMax`,
 * named by its dotted path under `root` ("$" for the top of a body), at most ERRORS_MAX.
 */
export function boundaryTextErrors(value: unknown, root = '', depthMax = BODY_DEPTH_MAX): FieldError[] {
  const errors: FieldError[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: root, depth: 0 }];
  for (let seen = 0; stack.length > 0 && seen < VALUES_MAX && errors.length < ERRORS_MAX; seen++) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) errors.push({ field: path || '$', message: problem });
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth >= depthMax) {
      errors.push({ field: path || '$', message: `must not nest deeper than ${depthMax} levels` });
      continue;
    }
    for (const [key, child] of Object.entries(current as Record<string, unknown>)) {
      const keyProblem = textProblem(key);
      if (keyProblem) errors.push({ field: join(path, JSON.stringify(key)), message: `key ${keyProblem}` });
      else if (PROTOTYPE_KEYS.has(key))
        errors.push({
          field: join(path, key),
          message: 'is a prototype key (__proto__, constructor, prototype): refused',
        });
      else stack.push({ value: child, path: join(path, key), depth: depth + 1 });
    }
  }
  return errors;
}
