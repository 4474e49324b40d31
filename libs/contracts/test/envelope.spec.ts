// Proves the envelope and payloads are validated on decode, naming each bad field, and
// that an old event version is upcast in the adapter before anything evolves it.
import { describe, expect, it } from '@jest/globals';
import { IsInt, IsString, Min } from 'class-validator';
import { EventRegistry } from '../src/envelope.js';
import { moneyFromWire, moneyToWire } from '../src/money.js';
import { tallyNames } from '../src/names.js';

class HoldPlacedV2 {
  @IsString() hold_id!: string;
  @IsInt() @Min(0) amount_minor!: number;
  @IsString() currency!: string;
}

const registry = () =>
  new EventRegistry([
    {
      type: 'HoldPlaced',
      version: 2,
      payload: HoldPlacedV2,
      // v1 had no currency: every v1 hold was in USD.
      upcasters: { 1: (p) => ({ ...p, currency: 'USD' }) },
    },
  ]);

const envelope = (overrides: Record<string, unknown> = {}) => ({
  event_id: 'hold-1:placed',
  type: 'HoldPlaced',
  schema_version: 2,
  aggregate_id: 'cap-1',
  correlation_id: 'req-1',
  occurred_at: '2026-11-30T10:00:00.000Z',
  payload: { hold_id: 'hold-1', amount_minor: 100, currency: 'EUR' },
  ...overrides,
});

describe('event envelope', () => {
  it('round-trips an event through encode and decode', () => {
    const r = registry();
    const bytes = r.encode({
      eventId: 'e1',
      type: 'HoldPlaced',
      aggregateId: 'cap-1',
      occurredAt: '2026-11-30T10:00:00.000Z',
      payload: { hold_id: 'h', amount_minor: 5, currency: 'EUR' },
    });
    const decoded = r.decode(bytes);
    expect(decoded.ok && decoded.value.payload).toEqual({ hold_id: 'h', amount_minor: 5, currency: 'EUR' });
    expect(decoded.ok && decoded.value.schemaVersion).toBe(2);
  });

  it('upcasts a v1 payload to the current version in the adapter', () => {
    const decoded = registry().decode(
      JSON.stringify(envelope({ schema_version: 1, payload: { hold_id: 'hold-1', amount_minor: 7 } })),
    );
    expect(decoded.ok && decoded.value.payload).toEqual({ hold_id: 'hold-1', amount_minor: 7, currency: 'USD' });
  });

  it('names every bad envelope and payload field', () => {
    const bad = registry().decode(JSON.stringify(envelope({ occurred_at: 'yesterday', schema_version: 0 })));
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.errors.map((e) => e.field).sort()).toEqual(['occurred_at', 'schema_version']);
    const badPayload = registry().decode(
      JSON.stringify(envelope({ payload: { hold_id: 'h', amount_minor: -1, currency: 'EUR', extra: true } })),
    );
    expect(!badPayload.ok && badPayload.errors.map((e) => e.field).sort()).toEqual([
      'payload.amount_minor',
      'payload.extra',
    ]);
  });

  it('refuses malformed JSON, unknown types and versions newer than it knows', () => {
    const r = registry();
    expect(r.decode('{"event_id":')).toMatchObject({ ok: false, errors: [{ field: '$' }] });
    expect(r.decode(JSON.stringify(envelope({ type: 'Mystery' })))).toMatchObject({
      ok: false,
      errors: [{ field: 'type' }],
    });
    expect(r.decode(JSON.stringify(envelope({ schema_version: 3 })))).toMatchObject({
      ok: false,
      errors: [{ field: 'schema_version' }],
    });
  });

  it('refuses to encode an invalid payload: a bug must not reach the stream', () => {
    expect(() =>
      registry().encode({
        eventId: 'e',
        type: 'HoldPlaced',
        aggregateId: 'a',
        occurredAt: '2026-11-30T10:00:00.000Z',
        payload: { hold_id: 1 },
      }),
    ).toThrow(/refusing to encode invalid HoldPlaced/);
  });
});

describe('names and money', () => {
  it('derives every stream and subject from the namespace and refuses unsafe subject tokens', () => {
    const names = tallyNames('t1');
    expect(names.budgetEventsStream).toBe('T1_BUDGET_EVENTS');
    expect(names.budgetEventSubject('cap_1')).toBe('t1.budget.evt.cap_1');
    expect(() => names.workEventSubject('a.b')).toThrow(/subject token/);
    expect(() => names.workEventSubject('*')).toThrow(/subject token/);
  });

  it('serialises money as a JSON number up to 2^53-1 and as a decimal string above it', () => {
    expect(moneyToWire(9007199254740991n)).toBe(9007199254740991);
    expect(moneyToWire(9007199254740992n)).toBe('9007199254740992');
    expect(moneyFromWire('9007199254740993')).toBe(9007199254740993n);
    expect(moneyFromWire(1.5)).toBeUndefined();
    expect(moneyFromWire('1e3')).toBeUndefined();
  });
});
