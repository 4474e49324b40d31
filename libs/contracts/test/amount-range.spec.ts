// Proves that an amount on the wire is an integer in [0, 2^63-1] in canonical form (ADR 0044): moneyFromWire, IsMoney (full and fast path) and the 422/400 split.
import { describe, expect, it } from '@jest/globals';
import { validateSync } from 'class-validator';
import { plainToInstance } from 'class-transformer';
import {
  AMOUNT_MAX_UNITS,
  IssueCapabilityDto,
  MONEY_JSON_SCHEMA,
  moneyFromWire,
  onlyOutOfRange,
  outsideAmountRange,
  passesFast,
  SettleCommandDto,
  validatePlain,
} from '../src/index.js';

const MAX = '9223372036854775807';
const PAST_MAX = '9223372036854775808';

/** [wire value, what moneyFromWire answers]. */
const TABLE: readonly (readonly [unknown, bigint | undefined])[] = [
  [0, 0n],
  [Number.MAX_SAFE_INTEGER, 9007199254740991n],
  ['0', 0n],
  ['42', 42n],
  ['9007199254740993', 9007199254740993n],
  [MAX, AMOUNT_MAX_UNITS],
  [AMOUNT_MAX_UNITS, AMOUNT_MAX_UNITS],
  [PAST_MAX, undefined],
  [AMOUNT_MAX_UNITS + 1n, undefined],
  ['100000000000000000000', undefined],
  ['1'.repeat(30), undefined],
  [-1, undefined],
  ['-1', undefined],
  [-1n, undefined],
  ['007', undefined],
  ['00', undefined],
  [' 1', undefined],
  ['1 ', undefined],
  ['+1', undefined],
  ['1e3', undefined],
  ['1.0', undefined],
  ['', undefined],
  [1.5, undefined],
  [Number.MAX_SAFE_INTEGER + 1, undefined],
  [1e20, undefined],
  [Number.NaN, undefined],
  [Number.POSITIVE_INFINITY, undefined],
  [null, undefined],
  [true, undefined],
  [{}, undefined],
];

const issue = (share: unknown) => ({
  subject_public_key: 'A'.repeat(43),
  ttl_seconds: 60,
  grants: [{ server_id: 's', tool_name: 't' }],
  budget_share_units: share,
});

function errorsOf(plain: object) {
  return validateSync(plainToInstance(IssueCapabilityDto, plain), { whitelist: true, forbidNonWhitelisted: true });
}

describe('ADR 0044 amounts on the wire', () => {
  it.each(TABLE)('B19 moneyFromWire(%p) is %p', (value, expected) => {
    expect(moneyFromWire(value)).toBe(expected);
  });

  // JSON has no bigint, and IsOptional lets null through as an absent field.
  it.each(TABLE.filter(([value]) => typeof value !== 'bigint' && value !== null))(
    'B19 IsMoney accepts %p exactly when moneyFromWire does, on the full and the fast path',
    (value, expected) => {
      const full = validatePlain(IssueCapabilityDto, issue(value));
      expect(full.ok).toBe(expected !== undefined);
      if (!full.ok) expect(full.errors.map((e) => e.field)).toEqual(['budget_share_units']);
      // The fast accept must never accept what the full path refuses (ADR 0009).
      expect(passesFast(IssueCapabilityDto, issue(value))).toBe(expected !== undefined);
    },
  );

  it('B19 2^63-1 is accepted and 2^63 refused for every money field of the Admit and Settle commands', () => {
    const settle = (cost: string) => ({ hold_id: 'h', outcome: { kind: 'completed', cost_units: cost } });
    expect(validatePlain(SettleCommandDto, settle(MAX)).ok).toBe(true);
    const refused = validatePlain(SettleCommandDto, settle(PAST_MAX));
    expect(refused.ok ? [] : refused.errors.map((e) => e.field)).toEqual(['outcome.cost_units']);
  });

  it('B19 a well-formed integer outside [0, 2^63-1] is out of range (422); anything malformed is not (400)', () => {
    for (const value of [PAST_MAX, '-1', -1, 1e20, AMOUNT_MAX_UNITS + 1n, '9'.repeat(10_000)])
      expect({ value, outside: outsideAmountRange(value) }).toEqual({ value, outside: true });
    for (const value of [MAX, '0', '-0', 0, '007', '+1', ' 1', '1.5', 1.5, 'x', null, Number.POSITIVE_INFINITY])
      expect({ value, outside: outsideAmountRange(value) }).toEqual({ value, outside: false });
    expect(onlyOutOfRange(errorsOf(issue('100000000000000000000')))).toBe(true);
    expect(onlyOutOfRange(errorsOf({ ...issue(1), ttl_seconds: -1 }))).toBe(true);
    expect(
      onlyOutOfRange(errorsOf({ ...issue(1), grants: [{ server_id: 's', tool_name: 't', max_invocations: 1e20 }] })),
    ).toBe(true);
    // Malformed, or out of range next to another refusal: 400 as before.
    expect(onlyOutOfRange(errorsOf(issue('007')))).toBe(false);
    expect(onlyOutOfRange(errorsOf({ ...issue(PAST_MAX), extra: 1 }))).toBe(false);
    expect(onlyOutOfRange(errorsOf({ ...issue(PAST_MAX), ttl_seconds: 'soon' }))).toBe(false);
    // An unknown field is refused for its name, whatever number it carries.
    expect(onlyOutOfRange(errorsOf({ ...issue(1), extra: 1e20 }))).toBe(false);
    expect(onlyOutOfRange([])).toBe(false);
  });

  it('B19 the OpenAPI schema of an amount says its range and refuses what the validator refuses by pattern', () => {
    const pattern = new RegExp(MONEY_JSON_SCHEMA.oneOf[1].pattern);
    expect(pattern.test(MAX)).toBe(true);
    for (const value of ['1'.repeat(20), '-1', '007', '+1', ' 1']) expect(pattern.test(value)).toBe(false);
    expect(MONEY_JSON_SCHEMA.description).toContain('2^63-1');
  });
});
