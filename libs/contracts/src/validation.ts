// Decoding and validation of anything that crosses a boundary: the result names every
// bad field, so a caller (or the dead-letter stream) learns exactly what to fix.
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { walkJson } from './json-walk.js';
import { outsideAmountRange } from './money.js';

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

export type Decoded<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: FieldError[] };

export type Constructor<T> = new (...args: never[]) => T;

export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) out.push({ field, message });
    if (error.children && error.children.length > 0) out.push(...flattenValidationErrors(error.children, field));
  }
  return out;
}

/** The rules that refuse a value only for its size: an amount's, a count's minimum and maximum. */
const RANGE_CONSTRAINTS: ReadonlySet<string> = new Set(['isMoney', 'min', 'max']);

/**
 * True when every refused field is a well-formed integer outside [0, 2^63-1] and fails
 * only its range: the request is then 422 (http-api.md, Exactness) instead of 400.
 */
export function onlyOutOfRange(errors: readonly ValidationError[]): boolean {
  let refused = 0;
  const walk = (list: readonly ValidationError[]): boolean =>
    list.every((error) => {
      const names = Object.keys(error.constraints ?? {});
      if (names.length > 0) {
        refused++;
        if (!names.every((name) => RANGE_CONSTRAINTS.has(name)) || !outsideAmountRange(error.value)) return false;
      }
      return walk(error.children ?? []);
    });
  return walk(errors) && refused > 0;
}

/** Validates a plain object against a class-validator DTO. Unknown fields are refused. */
export function validatePlain<T extends object>(dto: Constructor<T>, plain: unknown, field = ''): Decoded<T> {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    return { ok: false, errors: [{ field: field || '$', message: 'must be a JSON object' }] };
  }
  const instance = plainToInstance(dto as new () => T, plain);
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true });
  if (errors.length > 0) return { ok: false, errors: flattenValidationErrors(errors, field) };
  return { ok: true, value: instance };
}

/** Parses JSON bytes and validates them. Malformed JSON is a field error on `$`. */
export function decodeJson<T extends object>(dto: Constructor<T>, data: Uint8Array | string): Decoded<T> {
  let plain: unknown;
  const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  try {
    plain = JSON.parse(text);
  } catch (error) {
    return { ok: false, errors: [{ field: '$', message: `malformed JSON: ${(error as Error).message}` }] };
  }
  const proto = protoKeyIn(text, plain);
  if (proto) return { ok: false, errors: [{ field: proto, message: PROTO_KEY_MESSAGE }] };
  return validatePlain(dto, plain);
}

export const PROTO_KEY_MESSAGE = 'a key named __proto__ is not allowed';
/** Bound on the values searched for a __proto__ key; past it the value is treated as having one. */
const PROTO_SEARCH_VALUES_MAX = 100_000;

/** protoKeyIn for JSON text that is not parsed yet: parsed only when the key appears in it. */
export function protoKeyInJson(text: string): string | undefined {
  return text.includes('"__proto__"') ? protoKeyIn(text, JSON.parse(text)) : undefined;
}

/**
 * The path of an own "__proto__" key in a parsed JSON value, if it has one. JSON.parse
 * keeps such a key as a plain property, class-transformer drops it before validation, so
 * it would pass unchecked into the application, where Object.assign would turn it into
 * a prototype. `text` is the JSON it came from: without the quoted key in it, nothing is
 * walked.
 */
export function protoKeyIn(text: string, value: unknown): string | undefined {
  if (!text.includes('"__proto__"')) return undefined;
  let found: string | undefined;
  const walked = walkJson(value, PROTO_SEARCH_VALUES_MAX, (node, path) => {
    if (Array.isArray(node) || !Object.hasOwn(node, '__proto__')) return true;
    found = path === '$' ? '__proto__' : `${path.slice(2)}.__proto__`;
    return false;
  });
  return walked === 'too_large' ? '$' : found;
}

export function describeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.message}`).join('; ');
}
