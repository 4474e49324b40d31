// Proves the event store's fast paths in @tally/contracts (envelope decoding, payload
// validation) are pure optimisations: for any input, encode and decode return exactly
// what the plain class-validator path (validatePlain) returns, errors included.
import { describe, expect, it } from '@jest/globals';
import {
  EventEnvelopeDto,
  EventRegistry,
  decodeJson,
  describeFieldErrors,
  passesFast,
  validatePlain,
  type Constructor,
  type Decoded,
  type EventMessage,
} from '@tally/contracts';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsDefined,
  IsIn,
  IsISO8601,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  Validate,
  ValidateNested,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import fc from 'fast-check';
import { CounterIncremented } from './fixtures.js';

/** A cross-field rule: it reads args.object, so it must see the same instance on both paths. */
@ValidatorConstraint({ name: 'notAboveLimit' })
class NotAboveLimit implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const limit = (args.object as { limit_minor?: unknown }).limit_minor;
    return typeof value === 'number' && typeof limit === 'number' && value <= limit;
  }
}

class Charged {
  @IsString() @Matches(/^cap-[0-9]+$/) capability_id!: string;
  @IsInt() @Min(0) @Max(1_000_000) @Validate(NotAboveLimit) amount_minor!: number;
  @IsInt() @Min(0) limit_minor!: number;
  @IsIn(['USD', 'EUR']) currency!: string;
  @IsOptional() @IsISO8601({ strict: true }) settled_at?: string;
  @IsOptional() @IsObject() meta?: Record<string, unknown>;
}

class Line {
  @IsInt() n!: number;
}

/** Not eligible for the fast path (nested, IsDefined): it must still behave the same. */
class Nested {
  @ValidateNested() @Type(() => Line) line!: Line;
  @IsDefined() note!: unknown;
}

class Leg {
  @IsString() @Length(1, 8) provider!: string;
  @IsIn(['m1', 'm2']) model!: string;
  @IsOptional() @ValidateNested() @Type(() => Line) weight?: Line;
}

/** Eligible for the fast path: nested objects, arrays of them, `each` rules and optional nesting. */
class Routed {
  @ValidateNested({ each: true }) @Type(() => Leg) @ArrayMaxSize(2) route!: Leg[];
  @IsOptional() @ValidateNested() @Type(() => Line) limits?: Line;
  @IsOptional() @IsString({ each: true }) @Length(1, 3, { each: true }) tags?: string[];
}

/** A @Type that converts a value is not modelled: the fast path must leave it to class-transformer. */
class Converted {
  @Type(() => Number) @IsInt() n!: number;
}

const PAYLOADS: Record<string, Constructor<object>> = { CounterIncremented, Charged, Nested, Routed, Converted };
const registry = new EventRegistry(Object.entries(PAYLOADS).map(([type, payload]) => ({ type, version: 1, payload })));

/** The reference: full DTO decoding and validatePlain, as the registry did before its fast paths. */
function slowDecode(data: string): Decoded<EventMessage> {
  const envelope = decodeJson(EventEnvelopeDto, data);
  if (!envelope.ok) return envelope;
  const e = envelope.value;
  const dto = PAYLOADS[e.type];
  if (!dto) return { ok: false, errors: [{ field: 'type', message: `unknown event type ${e.type}` }] };
  if (e.schema_version > 1)
    return {
      ok: false,
      errors: [{ field: 'schema_version', message: `version ${e.schema_version} is newer than supported 1` }],
    };
  const payload = validatePlain(dto, e.payload, 'payload');
  if (!payload.ok) return payload;
  return {
    ok: true,
    value: {
      eventId: e.event_id,
      type: e.type,
      schemaVersion: 1,
      aggregateId: e.aggregate_id,
      ...(e.causation_id === undefined ? {} : { causationId: e.causation_id }),
      ...(e.correlation_id === undefined ? {} : { correlationId: e.correlation_id }),
      occurredAt: e.occurred_at,
      payload: e.payload,
    },
  };
}

const valid: Record<string, unknown> = {
  event_id: 'e-1',
  type: 'CounterIncremented',
  schema_version: 1,
  aggregate_id: 'agg',
  causation_id: 'c-1',
  correlation_id: 'r-1',
  occurred_at: '2026-01-01T00:00:00.000Z',
  payload: { by: 1, writer: 'w' },
};
const emoji = '\uD83D\uDE00';
// Boundary values for every rule in the DTO: lengths either side of each limit (also in
// surrogate pairs and variation selectors, which class-validator counts differently),
// wrong types, nulls, odd numbers, strict and loose dates, payload shapes.
const boundary = fc.constantFrom<unknown>(
  '',
  'a',
  '\uFE0F',
  emoji,
  'a'.repeat(128),
  'a'.repeat(129),
  'a'.repeat(256),
  'a'.repeat(257),
  'a'.repeat(512),
  'a'.repeat(513),
  emoji.repeat(256),
  emoji.repeat(257),
  emoji.repeat(512),
  emoji.repeat(513),
  'a\uFE0F'.repeat(300),
  'CounterIncremented',
  'Unknown.Type',
  '9bad',
  'a'.repeat(127),
  'x_y.z',
  0,
  1,
  2,
  1.5,
  -1,
  1e21,
  null,
  true,
  [],
  [1],
  {},
  { by: 1, writer: 'w', extra: true },
  { by: 'x', writer: 'w' },
  '2026-01-01T00:00:00.000Z',
  '2026-02-30T00:00:00Z',
  '2026-01-01',
  '2026-01-01T25:00:00Z',
  '20260101T000000Z',
  'yesterday',
);
const mutation = fc.tuple(
  fc.constantFrom(...Object.keys(valid), 'extra', '__proto__', 'constructor', 'toString'),
  fc.oneof({ arbitrary: boundary, weight: 9 }, { arbitrary: fc.constant('<delete>'), weight: 1 }),
);

function envelopeJson(mutations: readonly [string, unknown][]): string {
  const fields = new Map(Object.entries(valid));
  for (const [key, value] of mutations) {
    if (value === '<delete>') fields.delete(key);
    else fields.set(key, value);
  }
  // Built by hand so that a "__proto__" key reaches the bytes as an ordinary key.
  return `{${[...fields].map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

describe('envelope fast path', () => {
  it('decodes any envelope bytes exactly as the class-validator path does, errors included', () => {
    fc.assert(
      fc.property(fc.array(mutation, { maxLength: 2 }), (mutations) => {
        const json = envelopeJson(mutations);
        expect(registry.decode(json)).toEqual(slowDecode(json));
      }),
      { numRuns: 3000 },
    );
  });

  it('malformed JSON and non-object JSON get the same field errors as before', () => {
    for (const bytes of ['{"event_id":', '[]', 'null', '42', '"s"', ''])
      expect(registry.decode(bytes)).toEqual(slowDecode(bytes));
  });

  const chargedBase: Record<string, unknown> = {
    capability_id: 'cap-1',
    amount_minor: 500,
    limit_minor: 1000,
    currency: 'USD',
    settled_at: '2026-01-01T00:00:00Z',
    meta: { k: 1 },
  };
  const nestedBase: Record<string, unknown> = { line: { n: 1 }, note: 'x' };
  const routedBase: Record<string, unknown> = {
    route: [
      { provider: 'p', model: 'm1' },
      { provider: 'q', model: 'm2', weight: { n: 2 } },
    ],
    limits: { n: 3 },
    tags: ['a', 'bc'],
  };
  const bases: Record<string, Record<string, unknown>> = {
    Charged: chargedBase,
    Nested: nestedBase,
    Routed: routedBase,
    Converted: { n: 1 },
    CounterIncremented: { by: 1, writer: 'w' },
  };
  const payloadValue = fc.constantFrom<unknown>(
    'cap-1',
    'cap-x',
    '',
    'USD',
    'EUR',
    'usd',
    0,
    1,
    -1,
    1.5,
    999,
    1000,
    1001,
    1_000_000,
    1_000_001,
    '5',
    null,
    true,
    [],
    {},
    { n: 1 },
    { n: 'x' },
    '2026-01-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '<undefined>',
    '<date>',
    [{ provider: 'p', model: 'm1' }],
    [{ provider: 'p', model: 'm3' }],
    [{ provider: 'toolongname', model: 'm1' }],
    [{ provider: 'p', model: 'm1', extra: 1 }],
    [
      { provider: 'p', model: 'm1' },
      { provider: 'p', model: 'm1' },
      { provider: 'p', model: 'm1' },
    ],
    [{ provider: 'p', model: 'm1', weight: { n: 'x' } }],
    [{ provider: 'p', model: 'm1', weight: null }],
    '<instance>',
    [{ provider: 'p', model: 'm1', weight: '<instance>' }],
    [null],
    [[{ provider: 'p', model: 'm1' }]],
    ['a'],
    ['abcd'],
    ['a', 1],
    { provider: 'p', model: 'm1' },
    [],
    '1',
  );
  const payloadMutation = fc.tuple(
    fc.constantFrom(
      ...Object.keys(chargedBase),
      ...Object.keys(nestedBase),
      ...Object.keys(routedBase),
      'n',
      'extra',
      '__proto__',
    ),
    fc.oneof({ arbitrary: payloadValue, weight: 9 }, { arbitrary: fc.constant('<delete>'), weight: 1 }),
  );
  /** An instance of an ordinary class with one own key, as a config DTO handed to an event would be. */
  class Weighted {
    n = 4;
  }
  const concrete = (value: unknown): unknown => {
    if (value === '<undefined>') return undefined;
    if (value === '<date>') return new Date(0);
    if (value === '<instance>') return new Weighted();
    if (Array.isArray(value))
      return value.map((item) =>
        item && typeof item === 'object' && !Array.isArray(item)
          ? Object.fromEntries(Object.entries(item).map(([k, v]) => [k, concrete(v)]))
          : item,
      );
    return value;
  };
  const mutate = (base: Record<string, unknown>, mutations: readonly [string, unknown][]) => {
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of mutations) {
      if (value === '<delete>') delete out[key];
      // Defined, not assigned: a "__proto__" key becomes an own property, as JSON.parse makes it.
      else
        Object.defineProperty(out, key, {
          value: concrete(value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    return out;
  };
  const encodeOutcome = (type: string, payload: Record<string, unknown>) => {
    try {
      return {
        bytes: Buffer.from(
          registry.encode({ eventId: 'e-1', type, aggregateId: 'agg', occurredAt: '2026-01-01T00:00:00Z', payload }),
        ).toString(),
      };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

  it('validates any payload on encode exactly as validatePlain does: the same events pass, the same errors refuse', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('Charged', 'Nested', 'Routed', 'Converted', 'CounterIncremented'),
        fc.array(payloadMutation, { maxLength: 3 }),
        (type, mutations) => {
          const payload = mutate(bases[type]!, mutations);
          const reference = validatePlain(PAYLOADS[type]!, payload, 'payload');
          const outcome = encodeOutcome(type, payload);
          // class-transformer drops a "__proto__" key, so validatePlain passes it; the encoder refuses it (unless undefined, which JSON omits).
          if (
            reference.ok &&
            Object.prototype.hasOwnProperty.call(payload, '__proto__') &&
            Object.getOwnPropertyDescriptor(payload, '__proto__')!.value !== undefined
          )
            expect(outcome).toEqual({ error: expect.stringContaining('payload.__proto__') });
          else if (reference.ok) expect(outcome).toHaveProperty('bytes');
          else
            expect(outcome).toEqual({
              error: `refusing to encode invalid ${type}: ${describeFieldErrors(reference.errors)}`,
            });
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('validates any payload on decode exactly as validatePlain does', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('Charged', 'Nested', 'Routed', 'Converted'),
        fc.array(payloadMutation, { maxLength: 3 }),
        (type, mutations) => {
          const payload = mutate(bases[type]!, mutations);
          const json = JSON.stringify({ ...valid, type, payload });
          expect(registry.decode(json)).toEqual(slowDecode(json));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('the fast path really serves nested DTOs and arrays of them, and leaves what it does not model (IsDefined, converting @Type) to class-validator', () => {
    expect(passesFast(Routed, routedBase)).toBe(true);
    expect(passesFast(Charged, chargedBase)).toBe(true);
    expect(passesFast(Routed, { ...routedBase, limits: new Weighted() })).toBe(true);
    expect(passesFast(Routed, { ...routedBase, route: [{ provider: 'p', model: 'm3' }] })).toBe(false);
    expect(validatePlain(Nested, nestedBase).ok).toBe(true);
    expect(passesFast(Nested, nestedBase)).toBe(false);
    expect(validatePlain(Converted, { n: '5' }).ok).toBe(true);
    expect(passesFast(Converted, { n: 5 })).toBe(false);
  });

  it('a key named __proto__, at any depth, is refused on decode with its place and is never encoded', () => {
    const json = JSON.stringify({ ...valid, type: 'Charged', payload: chargedBase }).replace(
      '"meta":{"k":1}',
      '"meta":{"k":1,"__proto__":{"polluted":true}}',
    );
    expect(registry.decode(json)).toEqual({
      ok: false,
      errors: [{ field: 'payload.meta.__proto__', message: 'a key named __proto__ is not allowed' }],
    });
    const commit = JSON.stringify({ commit_version: 1, events: [JSON.parse(json), valid] });
    expect(registry.decodeCommit(commit).ok).toBe(false);
    // A string value "__proto__" is only text.
    expect(registry.decode(JSON.stringify({ ...valid, payload: { by: 1, writer: '__proto__' } })).ok).toBe(true);
    const meta = JSON.parse('{"k":1,"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(() =>
      registry.encode({
        eventId: 'e-1',
        type: 'Charged',
        aggregateId: 'agg',
        occurredAt: '2026-01-01T00:00:00Z',
        payload: { ...chargedBase, meta },
      }),
    ).toThrow('payload.meta.__proto__');
  });
});
