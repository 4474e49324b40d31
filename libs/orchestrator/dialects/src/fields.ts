// Small readers for untrusted JSON: each returns the value or a refusal naming the field,
// so a translation reports the first bad field the way a DTO would.
import type { JsonObject, Translated } from './neutral.types.js';

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const ok = <T>(value: T): Translated<T> => ({ ok: true, value });
export const bad = <T = never>(field: string, message: string): Translated<T> => ({ ok: false, field, message });

/** Thrown inside a translation to leave it with a field error; caught at its entry point only. */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Runs a translation written with throwing readers and returns its named result. */
export function translate<T>(run: () => T): Translated<T> {
  try {
    return ok(run());
  } catch (error) {
    if (error instanceof FieldError) return bad(error.field, error.message);
    throw error;
  }
}

export function str(value: unknown, field: string, maxChars = 1_000_000): string {
  if (typeof value !== 'string') throw new FieldError(field, `${field} must be a string`);
  if (value.length > maxChars) throw new FieldError(field, `${field} must be at most ${maxChars} characters`);
  return value;
}

export function optStr(value: unknown, field: string, maxChars?: number): string | undefined {
  return value === undefined || value === null ? undefined : str(value, field, maxChars);
}

export function num(value: unknown, field: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    throw new FieldError(field, `${field} must be a number in [${min}, ${max}]`);
  return value;
}

export function int(value: unknown, field: string, min: number, max: number): number | undefined {
  const n = num(value, field, min, max);
  if (n !== undefined && !Number.isInteger(n)) throw new FieldError(field, `${field} must be an integer`);
  return n;
}

export function bool(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new FieldError(field, `${field} must be a boolean`);
  return value;
}

export function obj(value: unknown, field: string): JsonObject {
  if (!isObject(value)) throw new FieldError(field, `${field} must be an object`);
  return value;
}

export function arr(value: unknown, field: string, minItems: number, maxItems: number): unknown[] {
  if (!Array.isArray(value)) throw new FieldError(field, `${field} must be an array`);
  if (value.length < minItems || value.length > maxItems)
    throw new FieldError(field, `${field} must have ${minItems} to ${maxItems} items`);
  return value;
}

/** `stop` may be one string or a list of them. */
export function stopList(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  return arr(value, field, 0, 16).map((s, i) => str(s, `${field}[${i}]`, 1_000));
}

/** The fields of `body` not in `known`, which pass through to a provider of the same dialect. */
export function unknownFields(body: JsonObject, known: ReadonlySet<string>): JsonObject | undefined {
  const rest: JsonObject = {};
  let any = false;
  for (const [key, value] of Object.entries(body)) {
    if (known.has(key) || key === '__proto__') continue;
    rest[key] = value;
    any = true;
  }
  return any ? rest : undefined;
}

/** Arguments are JSON text on OpenAI's wire and an object on Anthropic's. */
export function parseArguments(text: string): JsonObject {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : { value };
  } catch {
    // A model can stream invalid JSON; the caller still sees what it produced.
    return { _raw: text };
  }
}

/** Text of the text parts, in order. */
export function textOf(parts: readonly { type: string; text?: string }[]): string {
  let text = '';
  for (const p of parts) if (p.type === 'text' && typeof p.text === 'string') text += p.text;
  return text;
}
