// A ValidationPipe for message handlers. Nest's default exceptionFactory throws an
// HttpException, which the RPC exception filter turns into "Internal server error";
// this one throws an RpcException carrying every bad field, which the command server
// recognises and answers as a validation error.
import type { ValidationError, ValidationPipe } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import { flattenValidationErrors, type FieldError } from '@tally/contracts';
import { FastValidationPipe } from './fast-validation-pipe.js';
import { validationError } from './wire.js';

/** The error object a validation RpcException carries (and the command server replies with). */
export interface ValidationRpcError {
  readonly type: 'validation';
  readonly message: string;
  readonly errors: readonly FieldError[];
}

export function isValidationRpcError(error: unknown): error is ValidationRpcError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { type?: unknown }).type === 'validation' &&
    Array.isArray((error as { errors?: unknown }).errors)
  );
}

export function commandValidationPipe(): ValidationPipe {
  return new FastValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validateCustomDecorators: false,
    exceptionFactory: (errors: ValidationError[]) => new RpcException(validationError(fieldErrorsOf(errors))),
  });
}

/** Nested fields become dotted paths (`grant.max_cost`); a non-object payload is an error on `$`. */
function fieldErrorsOf(errors: ValidationError[]): FieldError[] {
  const flat = flattenValidationErrors(errors);
  return flat.length > 0 ? flat : [{ field: '$', message: 'must be a JSON object matching the command' }];
}
