// Proves the event store's fast envelope decoding (in @tally/contracts) is a pure
// optimisation: for any bytes it returns exactly what the class-validator path returns.
import { describe, expect, it } from '@jest/globals';
import { EventEnvelopeDto, decodeJson, type Decoded, type EventMessage } from '@tally/contracts';
import fc from 'fast-check';
import { counterRegistry } from './fixtures.js';

const registry = counterRegistry();

/** The reference: full DTO decoding, then the same per-type payload step. */
function slowDecode(data: string): Decoded<EventMessage> {
  const envelope = decodeJson(EventEnvelopeDto, data);
  return envelope.ok ? registry.decodeEnvelope(envelope.value) : envelope;
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
  '', 'a', '\uFE0F', emoji, 'a'.repeat(128), 'a'.repeat(129), 'a'.repeat(256), 'a'.repeat(257), 'a'.repeat(512), 'a'.repeat(513),
  emoji.repeat(256), emoji.repeat(257), emoji.repeat(512), emoji.repeat(513), 'a\uFE0F'.repeat(300),
  'CounterIncremented', 'Unknown.Type', '9bad', 'a'.repeat(127), 'x_y.z',
  0, 1, 2, 1.5, -1, 1e21, null, true, [], [1], {}, { by: 1, writer: 'w', extra: true }, { by: 'x', writer: 'w' },
  '2026-01-01T00:00:00.000Z', '2026-02-30T00:00:00Z', '2026-01-01', '2026-01-01T25:00:00Z', '20260101T000000Z', 'yesterday',
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
    for (const bytes of ['{"event_id":', '[]', 'null', '42', '"s"', '']) expect(registry.decode(bytes)).toEqual(slowDecode(bytes));
  });
});
