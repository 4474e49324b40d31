// Proves FastValidationPipe is a pure optimisation of Nest's ValidationPipe: for any body,
// it returns an equal DTO (same class, same fields) or throws the same errors, and it
// really takes its fast accept for valid bodies of nested DTOs. The one difference is by
// design (ADR 0052): a body with a prototype key is refused naming it, where Nest's pipe
// would delete the key without a word.
import { describe, expect, it } from '@jest/globals';
import { BadRequestException, ValidationPipe, type ArgumentMetadata, type ValidationPipeOptions } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Min,
  ValidateNested,
} from 'class-validator';
import fc from 'fast-check';
import { FastValidationPipe } from '../src/index.js';

class Leg {
  @IsString() @Length(1, 8) provider!: string;
  @IsIn(['m1', 'm2']) model!: string;
}

class Limits {
  @IsInt() @Min(1) max_tokens!: number;
}

class Submit {
  @IsString() @Length(1, 16) work_id!: string;
  @ValidateNested({ each: true }) @Type(() => Leg) @ArrayMaxSize(2) route!: Leg[];
  @IsOptional() @ValidateNested() @Type(() => Limits) limits?: Limits;
  @IsOptional() @IsObject() meta?: Record<string, unknown>;
}

const options: ValidationPipeOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  transform: true,
};
const metadata: ArgumentMetadata = { type: 'body', metatype: Submit };
const base = { work_id: 'w1', route: [{ provider: 'p', model: 'm1' }], limits: { max_tokens: 4 }, meta: { k: 1 } };

/** The pipe's answer as data: the DTO it returns (with its class) or the errors it throws. */
async function outcome(pipe: ValidationPipe, body: unknown): Promise<unknown> {
  try {
    const dto = (await pipe.transform(body, metadata)) as object;
    return {
      dto: JSON.parse(JSON.stringify(dto)),
      cls: dto.constructor.name,
      nested: (dto as Submit).route?.map((l) => l.constructor.name),
    };
  } catch (error) {
    return { error: error instanceof BadRequestException ? error.getResponse() : String(error) };
  }
}

const values = fc.constantFrom<unknown>(
  'w1',
  '',
  'x'.repeat(17),
  0,
  1,
  -1,
  1.5,
  null,
  true,
  '<undefined>',
  [],
  {},
  { k: { __proto__: 1 } },
  [{ provider: 'p', model: 'm1' }],
  [{ provider: 'p', model: 'm3' }],
  [{ provider: 'p', model: 'm1', extra: 1 }],
  [null],
  ['a'],
  [
    { provider: 'p', model: 'm1' },
    { provider: 'q', model: 'm2' },
    { provider: 'r', model: 'm1' },
  ],
  { max_tokens: 0 },
  { max_tokens: 2, more: 1 },
);
const mutation = fc.tuple(
  fc.constantFrom('work_id', 'route', 'limits', 'meta', 'extra', 'constructor'),
  fc.oneof({ arbitrary: values, weight: 9 }, { arbitrary: fc.constant('<delete>'), weight: 1 }),
);

function body(mutations: readonly [string, unknown][]): Record<string, unknown> {
  // Through JSON, as a request body arrives ("__proto__" stays an own key).
  const fields = new Map<string, unknown>(Object.entries(base));
  for (const [key, value] of mutations) {
    if (value === '<delete>') fields.delete(key);
    else fields.set(key, value === '<undefined>' ? undefined : value);
  }
  return JSON.parse(
    `{${[...fields]
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
      .join(',')}}`,
  ) as Record<string, unknown>;
}

function hasPrototypeKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(
    ([key, child]) => ['__proto__', 'constructor', 'prototype'].includes(key) || hasPrototypeKey(child),
  );
}

describe('FastValidationPipe', () => {
  it('answers every body as Nest ValidationPipe does: an equal DTO of the same classes, or the same errors', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { maxLength: 3 }), async (mutations) => {
        const fast = await outcome(new FastValidationPipe(options), body(mutations));
        if (hasPrototypeKey(body(mutations))) expect(JSON.stringify(fast)).toContain('is a prototype key');
        else expect(fast).toEqual(await outcome(new ValidationPipe(options), body(mutations)));
      }),
      { numRuns: 1500 },
    );
  });

  it('takes the fast accept for a valid nested body, and leaves long arrays to the pipe', async () => {
    const pipe = new FastValidationPipe(options);
    const dto = (await pipe.transform(JSON.parse(JSON.stringify(base)), metadata)) as Submit;
    expect(dto).toBeInstanceOf(Submit);
    expect(dto.route[0]).toBeInstanceOf(Leg);
    expect(pipe.fastAccepts).toBe(1);
    // Longer than the fast path looks at, and long enough to overflow a spread into arguments.
    const long = { ...base, meta: { items: Array.from({ length: 200_000 }, () => 0) } };
    expect(await pipe.transform(long, metadata)).toBeInstanceOf(Submit);
    expect(pipe.fastAccepts).toBe(1);
  });

  it('ADR 0052 a prototype key anywhere in a body is refused naming its field, and Object.prototype is untouched', async () => {
    const pipe = new FastValidationPipe(options);
    const refused = await outcome(
      pipe,
      JSON.parse('{"work_id":"w1","route":[],"meta":{"__proto__":{"polluted":true}}}'),
    );
    expect(JSON.stringify(refused)).toContain('meta.__proto__ is a prototype key');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(pipe.fastAccepts).toBe(0);
  });

  it('refuses options it cannot answer for', () => {
    expect(() => new FastValidationPipe({ whitelist: true, transform: true })).toThrow(/forbidNonWhitelisted/);
  });
});
