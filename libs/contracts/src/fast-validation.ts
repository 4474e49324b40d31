// A fast accept for class-validator DTOs. validateSync (after plainToInstance) spends most
// of its time finding and grouping metadata and building error objects, on every call;
// events are encoded and decoded thousands of times a second. For a class whose rules are
// all plain property validators, IsOptional conditions and nested DTOs (with their @Type),
// the rules are compiled once here and run on the plain value the way validateSync runs
// them on the instance: the same constraint functions with the same arguments, the same
// `each` handling, the same whitelist (unknown keys refuse) and nesting. Only a full pass
// is trusted: anything else, and every class that uses a feature this does not model, goes
// through validatePlain, which is the one source of error messages.
import { TransformationType } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { getMetadataStorage, type ValidationArguments } from 'class-validator';
import type { Constructor } from './validation.js';

type Condition = (object: object, value: unknown) => boolean;
type Check = {
  readonly constraints: unknown[];
  readonly each: boolean;
  readonly validate: (value: unknown, args: ValidationArguments) => unknown;
};

interface PropertyRules {
  readonly conditions: readonly Condition[];
  readonly checks: readonly Check[];
  /** The @Type class of a ValidateNested property. */
  readonly nested?: CompiledClass;
}

interface CompiledClass {
  readonly name: string;
  readonly properties: ReadonlyMap<string, PropertyRules>;
}

/** Bound on nesting followed while validating one value (deeper values take the full path). */
const DEPTH_MAX = 16;

const compiled = new Map<Constructor<object>, CompiledClass | null>();

/** True only when validatePlain(dto, plain) would certainly accept `plain`; false means "ask it". */
export function passesFast(dto: Constructor<object>, plain: unknown): boolean {
  const rules = compiledFor(dto);
  return rules !== null && isPlainObject(plain) && passesClass(rules, plain as Record<string, unknown>, 0);
}

function compiledFor(dto: Constructor<object>): CompiledClass | null {
  if (!compiled.has(dto)) {
    // A class that nests itself reaches this entry while compiling and is left to the full path.
    compiled.set(dto, null);
    compiled.set(dto, compile(dto));
  }
  return compiled.get(dto) ?? null;
}

function compile(dto: Constructor<object>): CompiledClass | null {
  if (!plainTransformOnly(dto)) return null;
  const storage = getMetadataStorage();
  // The same query validateSync makes without groups or a schema.
  const metadatas = storage.getTargetValidationMetadatas(dto, undefined as unknown as string, false, false, undefined);
  if (metadatas.length === 0) return null;
  const building = new Map<
    string,
    { conditions: Condition[]; checks: Check[]; nested?: CompiledClass; nestedSeen: boolean }
  >();
  for (const meta of metadatas) {
    const rules = building.get(meta.propertyName) ?? { conditions: [], checks: [], nestedSeen: false };
    building.set(meta.propertyName, rules);
    if (meta.validateIf) return null;
    if (meta.type === 'conditionalValidation' && meta.name === 'isOptional' && !meta.each) {
      rules.conditions.push(meta.constraints[0] as Condition);
    } else if (meta.type === 'customValidation' && meta.constraintCls) {
      for (const constraint of storage.getTargetValidatorConstraints(meta.constraintCls)) {
        if (constraint.async) return null;
        const instance = constraint.instance as { validate: Check['validate'] };
        rules.checks.push({
          constraints: meta.constraints,
          each: meta.each === true,
          validate: (value, args) => instance.validate(value, args),
        });
      }
    } else if (meta.type === 'nestedValidation' && !rules.nestedSeen) {
      const nested = nestedClassOf(dto, meta.propertyName);
      if (!nested) return null;
      rules.nested = nested;
      rules.nestedSeen = true;
    } else {
      return null;
    }
  }
  for (const property of building.keys()) {
    // A @Type on a property that is not nested converts the value (Number, Date...): not modelled.
    if (defaultMetadataStorage.findTypeMetadata(dto, property) && !building.get(property)!.nested) return null;
    if (defaultMetadataStorage.findTransformMetadatas(dto, property, TransformationType.PLAIN_TO_CLASS).length > 0)
      return null;
  }
  const properties = new Map(
    [...building].map(([property, r]) => [
      property,
      { conditions: r.conditions, checks: r.checks, ...(r.nested ? { nested: r.nested } : {}) },
    ]),
  );
  return { name: dto.name, properties };
}

/** plainToInstance copies the plain value as it is: no expose/exclude strategy or renames. */
function plainTransformOnly(dto: Constructor<object>): boolean {
  return (
    defaultMetadataStorage.getStrategy(dto) === 'none' &&
    defaultMetadataStorage.getExposedMetadatas(dto).length === 0 &&
    defaultMetadataStorage.getExcludedMetadatas(dto).length === 0
  );
}

function nestedClassOf(dto: Constructor<object>, property: string): CompiledClass | null {
  const type = defaultMetadataStorage.findTypeMetadata(dto, property);
  if (!type || type.options?.discriminator) return null;
  const target = type.typeFunction();
  if (
    typeof target !== 'function' ||
    target === Object ||
    target === Number ||
    target === String ||
    target === Boolean ||
    target === Date
  )
    return null;
  return compiledFor(target as Constructor<object>);
}

function passesClass(rules: CompiledClass, object: Record<string, unknown>, depth: number): boolean {
  for (const key of Object.keys(object)) if (!rules.properties.has(key)) return false;
  for (const [property, rule] of rules.properties) {
    const value = object[property];
    if (!rule.conditions.every((condition) => condition(object, value))) continue;
    for (const check of rule.checks) if (!passesCheck(check, rules.name, property, object, value)) return false;
    if (rule.nested && !passesNested(rule.nested, value, depth)) return false;
  }
  return true;
}

function passesCheck(check: Check, targetName: string, property: string, object: object, value: unknown): boolean {
  const args = { targetName, property, object, value, constraints: check.constraints } as ValidationArguments;
  if (check.each && Array.isArray(value)) return value.every((item) => check.validate(item, args) === true);
  // Sets and Maps are validated item by item by class-validator: not modelled here.
  if (check.each && (value instanceof Set || value instanceof Map)) return false;
  return check.validate(value, args) === true;
}

/** ValidateNested: undefined passes, an object (or each item of an array) must pass its class; anything else is refused. */
function passesNested(rules: CompiledClass, value: unknown, depth: number): boolean {
  if (value === undefined) return true;
  if (depth >= DEPTH_MAX) return false;
  if (Array.isArray(value))
    return value.every((item) => isPlainObject(item) && passesClass(rules, item as Record<string, unknown>, depth + 1));
  return isPlainObject(value) && passesClass(rules, value as Record<string, unknown>, depth + 1);
}

/**
 * An object plainToInstance copies key by key: a plain object, or an instance of an
 * ordinary class (a config DTO handed to an event, say), whose own enumerable keys are
 * what gets copied. Built-ins that class-transformer treats specially take the full path.
 */
function isPlainObject(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  return !(
    value instanceof Date ||
    value instanceof Map ||
    value instanceof Set ||
    value instanceof Promise ||
    value instanceof RegExp ||
    value instanceof Error ||
    ArrayBuffer.isView(value)
  );
}
