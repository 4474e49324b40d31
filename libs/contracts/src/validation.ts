// Decoding and validation of anything that crosses a boundary: the result names every
// bad field, so a caller (or the dead-letter stream) learns exactly what to fix.
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: FieldError[] };

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
  try {
    plain = JSON.parse(typeof data === 'string' ? data : Buffer.from(data).toString('utf8'));
  } catch (error) {
    return { ok: false, errors: [{ field: '$', message: `malformed JSON: ${(error as Error).message}` }] };
  }
  return validatePlain(dto, plain);
}

export function describeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.message}`).join('; ');
}
