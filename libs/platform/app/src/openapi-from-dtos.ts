// The OpenAPI document generated from the running app (issue 12 item 6, ADR 0031):
// @nestjs/swagger reads every mounted route, its path and query parameters and its body
// DTO; the DTOs' schemas come from their class-validator rules, so the document says what
// the validators accept and cannot drift from them. @nestjs/swagger reads a property's
// schema from `@ApiProperty` or from the static `_OPENAPI_METADATA_FACTORY` its compiler
// plugin writes; Tally's build (swc) runs no such plugin, so this file writes that factory
// at boot from the validators' own metadata. What the validators cannot say (responses,
// summaries, the problem+json shape) stays in each service's hand-written part, merged in.
import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { getMetadataStorage } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata.js';
import { MONEY_JSON_SCHEMA } from '@tally/contracts';

type Json = Record<string, unknown>;
type Constructor = abstract new (...args: never[]) => object;

const METADATA_FACTORY = '_OPENAPI_METADATA_FACTORY';
/** Nesting followed from one DTO; deeper classes are described as plain objects. */
const DEPTH_MAX = 8;

/** class-validator's ValidationTypes for IsOptional/ValidateIf and ValidateNested. */
const CONDITIONAL = 'conditionalValidation';
const NESTED = 'nestedValidation';

/** One property's schema, as @nestjs/swagger's ApiProperty options take it. */
export interface PropertySchema {
  required: boolean;
  type?: unknown;
  isArray?: boolean;
  [keyword: string]: unknown;
}

/** The validators of each property of `dto` (its ancestors' included), by property. */
export function validatorsOf(dto: Constructor): Map<string, ValidationMetadata[]> {
  const all = getMetadataStorage().getTargetValidationMetadatas(
    dto as never,
    undefined as unknown as string,
    false,
    false,
    undefined,
  );
  const out = new Map<string, ValidationMetadata[]>();
  for (const m of all) out.set(m.propertyName, [...(out.get(m.propertyName) ?? []), m]);
  return out;
}

/** The class a ValidateNested property holds, from its class-transformer @Type. */
export function nestedClassOf(dto: Constructor, property: string): Constructor | undefined {
  const meta = defaultMetadataStorage.findTypeMetadata(dto as never, property);
  const type = meta?.typeFunction();
  // @Type(() => Number) on a query field converts a string; only a class is a nested DTO.
  const primitive = [Object, Number, String, Boolean, Date, BigInt] as unknown[];
  return typeof type === 'function' && !primitive.includes(type) ? (type as Constructor) : undefined;
}

/** What a class-validator rule says about the JSON value, as schema keywords on the value (or on each item with `each`). */
function keywordsOf(m: ValidationMetadata): Json {
  const c = (m.constraints ?? []) as unknown[];
  switch (m.name) {
    case 'isString':
    case 'isNotEmpty':
      return m.name === 'isString' ? { type: 'string' } : {};
    case 'isInt':
      return { type: 'integer' };
    case 'isNumber':
      return { type: 'number' };
    case 'isBoolean':
      return { type: 'boolean' };
    case 'isObject':
      return { type: 'object' };
    case 'isIn':
      return { enum: c[0] };
    case 'equals':
      return { enum: [c[0]] };
    case 'matches':
      return { type: 'string', pattern: (c[0] as RegExp).source };
    case 'isLength':
      return { type: 'string', minLength: c[0], ...(c[1] === undefined ? {} : { maxLength: c[1] }) };
    case 'minLength':
      return { type: 'string', minLength: c[0] };
    case 'maxLength':
      return { type: 'string', maxLength: c[0] };
    case 'min':
      return { minimum: c[0] };
    case 'max':
      return { maximum: c[0] };
    case 'isPositive':
      return { exclusiveMinimum: 0 };
    case 'isISO8601':
    case 'isDateString':
      return { type: 'string', format: 'date-time' };
    case 'isUrl':
      return { type: 'string', format: 'uri' };
    case 'isUUID':
      return { type: 'string', format: 'uuid' };
    case 'isBase64':
      return { type: 'string', contentEncoding: 'base64' };
    case 'isMoney':
      return { ...MONEY_JSON_SCHEMA };
    case 'isTimeZone':
      return { type: 'string', description: 'an IANA time zone' };
    default:
      return {};
  }
}

/** Array-level rules: they constrain the array, not its items. */
function arrayKeywordsOf(m: ValidationMetadata): Json | undefined {
  const c = (m.constraints ?? []) as unknown[];
  if (m.name === 'isArray') return {};
  if (m.name === 'arrayMinSize') return { minItems: c[0] };
  if (m.name === 'arrayMaxSize') return { maxItems: c[0] };
  if (m.name === 'arrayNotEmpty') return { minItems: 1 };
  if (m.name === 'arrayUnique') return { uniqueItems: true };
  return undefined;
}

/** The schema of one property, from its validators: required unless a condition (IsOptional) guards it. */
export function propertySchemaOf(
  dto: Constructor,
  property: string,
  rules: readonly ValidationMetadata[],
): PropertySchema {
  const required = !rules.some((m) => m.type === CONDITIONAL);
  const isArray = rules.some((m) => m.name === 'isArray' || m.each === true);
  const value: Json = {};
  const array: Json = {};
  for (const m of rules) {
    const arrayLevel = arrayKeywordsOf(m);
    if (arrayLevel) Object.assign(array, arrayLevel);
    else if (m.type !== CONDITIONAL && m.type !== NESTED) Object.assign(value, keywordsOf(m));
  }
  const nested = rules.some((m) => m.type === NESTED) ? nestedClassOf(dto, property) : undefined;
  // A rule with no schema keyword of its own (a custom check) leaves the type open: any JSON value.
  const type = nested ?? (typeof value['type'] === 'string' ? typeName(value['type']) : undefined);
  delete value['type'];
  if (type === undefined && Object.keys(value).length === 0 && !isArray) return { required };
  if (!isArray) return { required, ...(type === undefined ? {} : { type }), ...value };
  return { required, isArray: true, ...(type === undefined ? {} : { type }), ...value, ...array };
}

/** The types @nestjs/swagger maps to JSON Schema types. */
function typeName(type: string): unknown {
  return { string: String, number: Number, boolean: Boolean, integer: 'integer', object: Object }[type] ?? type;
}

/** Writes the swagger metadata factory of `dto` and of every DTO it nests, from their validators. */
export function describeDto(dto: Constructor, depth = 0, seen = new Set<Constructor>()): void {
  if (seen.has(dto) || depth > DEPTH_MAX) return;
  seen.add(dto);
  const properties: Record<string, PropertySchema> = {};
  for (const [property, rules] of validatorsOf(dto)) {
    properties[property] = propertySchemaOf(dto, property, rules);
    const nested = rules.some((m) => m.type === NESTED) ? nestedClassOf(dto, property) : undefined;
    if (nested) describeDto(nested, depth + 1, seen);
  }
  Object.defineProperty(dto, METADATA_FACTORY, { value: () => properties, configurable: true });
}

/** The classes the routes' parameters are declared with that carry validators: bodies and query DTOs. */
export function routeDtosOf(controllers: readonly Constructor[]): Constructor[] {
  const out = new Set<Constructor>();
  for (const controller of controllers) {
    const prototype = controller.prototype as Record<string, unknown>;
    for (const method of Object.getOwnPropertyNames(prototype)) {
      if (method === 'constructor' || typeof prototype[method] !== 'function') continue;
      const types = (Reflect.getMetadata('design:paramtypes', prototype, method) ?? []) as unknown[];
      for (const type of types)
        if (typeof type === 'function' && validatorsOf(type as Constructor).size > 0) out.add(type as Constructor);
    }
  }
  return [...out];
}

/** The hand-written document of a service as the parts merged into the generated one. */
export function openApiPartsOf(handWritten: Json): OpenApiParts {
  const info = (handWritten['info'] ?? { title: 'Tally', version: '0.0.0' }) as OpenApiParts['info'];
  const components = (handWritten['components'] ?? {}) as Json;
  return {
    info,
    operations: (handWritten['paths'] ?? {}) as Record<string, Record<string, Json>>,
    schemas: (components['schemas'] ?? {}) as Record<string, unknown>,
  };
}

export interface OpenApiParts {
  readonly info: { readonly title: string; readonly version: string; readonly description?: string };
  /** Per path and method: what the validators cannot say (responses, summary, operationId, description). */
  readonly operations?: Record<string, Record<string, Json>>;
  /** Schemas the responses refer to, and the problem+json shape. */
  readonly schemas?: Record<string, unknown>;
}
