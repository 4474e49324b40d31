// Nest's ValidationPipe with the fast accept of @tally/contracts (passesFast). Every
// command and request body goes through a pipe; validate() walks class-validator's
// metadata on every call, which is a visible share of a busy service's CPU. A body that
// is a plain JSON tree (nothing the pipe would strip, close or refuse as binary) and
// passes the compiled rules is turned into its DTO exactly as the pipe would; anything
// else takes the pipe's own path, which stays the one source of errors.
import { ValidationPipe, type ArgumentMetadata, type ValidationPipeOptions } from '@nestjs/common';
import { boundaryTextErrors, passesFast } from '@tally/contracts';
import { plainToInstance } from 'class-transformer';
import { ValidationError } from 'class-validator';

/** Keys the pipe deletes before validating (prototype pollution): a body with one takes its path. */
const STRIPPED_KEYS = new Set(['__proto__', 'prototype', 'constructor']);
/** Bound on the values inspected; a larger body takes the pipe's path. */
const VALUES_MAX = 10_000;

export class FastValidationPipe extends ValidationPipe {
  /** How many bodies took the fast accept, for tests and diagnostics. */
  fastAccepts = 0;

  constructor(private readonly pipeOptions: ValidationPipeOptions) {
    super(pipeOptions);
    if (!(
      pipeOptions.whitelist &&
      pipeOptions.forbidNonWhitelisted &&
      pipeOptions.transform &&
      pipeOptions.forbidUnknownValues !== false &&
      !pipeOptions.groups &&
      !pipeOptions.skipMissingProperties &&
      !pipeOptions.transformOptions
    )) {
      // passesFast answers for exactly these options: anything else would make it wrong.
      throw new Error(
        'FastValidationPipe needs whitelist, forbidNonWhitelisted and transform, without groups, skipped properties or transform options',
      );
    }
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Before anything reads the value: NUL, unpaired surrogates and excessive nesting, named by field (ADR 0016).
    if (BOUNDARY_TYPES.has(metadata.type)) {
      const refused = boundaryTextErrors(value, metadata.type === 'body' ? '' : (metadata.data ?? metadata.type));
      if (refused.length > 0) throw this.exceptionFactory(refused.map(asValidationError));
    }
    const metatype = this.pipeOptions.expectedType ?? metadata.metatype;
    if (
      metatype &&
      this.toValidate({ ...metadata, metatype }) &&
      isPlainJsonTree(value) &&
      passesFast(metatype as new () => object, value)
    ) {
      this.fastAccepts++;
      return plainToInstance(metatype as new () => object, value);
    }
    return super.transform(value, metadata);
  }
}

/** What crosses the boundary: bodies (HTTP and commands), path parameters and queries. */
const BOUNDARY_TYPES = new Set(['body', 'param', 'query']);

function asValidationError(error: { field: string; message: string }): ValidationError {
  return Object.assign(new ValidationError(), {
    property: error.field,
    constraints: { text: `${error.field} ${error.message}` },
    children: [],
  });
}

/** Only plain objects, dense arrays and JSON primitives, without keys the pipe strips. */
function isPlainJsonTree(value: unknown): boolean {
  const stack: unknown[] = [value];
  for (let seen = 0; stack.length > 0; seen++) {
    if (seen >= VALUES_MAX) return false;
    const current = stack.pop();
    if (current === null || typeof current !== 'object') {
      if (typeof current === 'bigint' || typeof current === 'symbol' || typeof current === 'function') return false;
      continue;
    }
    if (Array.isArray(current)) {
      // A long array takes the pipe's path; pushing it item by item never spreads it into
      // arguments (a spread of ~120k items overflows the call stack: a 500 for a valid body).
      if (Object.keys(current).length !== current.length || seen + stack.length + current.length > VALUES_MAX)
        return false;
      for (const item of current) stack.push(item);
      continue;
    }
    const proto = Object.getPrototypeOf(current) as unknown;
    if (proto !== Object.prototype && proto !== null) return false;
    for (const key of Object.keys(current)) {
      if (STRIPPED_KEYS.has(key)) return false;
      stack.push((current as Record<string, unknown>)[key]);
    }
  }
  return true;
}
