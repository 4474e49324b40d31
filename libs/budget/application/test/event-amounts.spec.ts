// Proves that budget events carry only amounts in [0, 2^63-1] (ADR 0044): a stored event with a wider one is refused at decode naming the field, and none can be encoded.
import { describe, expect, it } from '@jest/globals';
import { AMOUNT_MAX_UNITS as DOMAIN_AMOUNT_MAX, type BudgetEvent } from '@tally/budget-domain';
import { AMOUNT_MAX_UNITS, COUNT_MAX } from '@tally/contracts';
import { AMOUNT_MAX_UNITS as PRICING_AMOUNT_MAX } from '@tally/orchestrator-domain';
import { budgetEventRegistry, toMessage } from '@tally/budget-application';

const registry = budgetEventRegistry();

/** A CapabilityIssued envelope as the stream would hold it, with the given payload fields. */
function stored(payload: Record<string, unknown>): string {
  return JSON.stringify({
    event_id: 'cap_child:issued',
    type: 'CapabilityIssued',
    schema_version: 1,
    aggregate_id: 'cap_root',
    occurred_at: '2026-01-01T00:00:00.000Z',
    payload: {
      capability_id: 'cap_child',
      root_id: 'cap_root',
      parent_id: 'cap_root',
      subject_public_key: 'A'.repeat(43),
      issued_at_ms: 1,
      expires_at_ms: 2,
      grants: [{ server_id: 's', tool_name: 't', parent_grant_index: 0 }],
      depth: 1,
      ...payload,
    },
  });
}

const fieldsOf = (decoded: ReturnType<typeof registry.decode>) =>
  decoded.ok ? [] : decoded.errors.map((e) => e.field);

describe('ADR 0044 budget events', () => {
  it('B19 a stored event with a 10^20 budget share is refused at decode as a bad event naming the field', () => {
    expect(fieldsOf(registry.decode(stored({ budget_units: '100000000000000000000' })))).toEqual([
      'payload.budget_units',
    ]);
    expect(fieldsOf(registry.decode(stored({ budget_units: '9223372036854775808' })))).toEqual([
      'payload.budget_units',
    ]);
    expect(registry.decode(stored({ budget_units: '9223372036854775807' })).ok).toBe(true);
  });

  it('B19 a grant limit or count of a stored event past its range is refused naming the nested field', () => {
    const grant = { server_id: 's', tool_name: 't', parent_grant_index: 0 };
    const wide = registry.decode(stored({ grants: [{ ...grant, max_total_cost_units: '1'.repeat(30) }] }));
    expect(fieldsOf(wide)).toEqual(['payload.grants.0.max_total_cost_units']);
    const count = registry.decode(stored({ grants: [{ ...grant, max_invocations: 2 ** 60 }] }));
    expect(fieldsOf(count)).toEqual(['payload.grants.0.max_invocations']);
  });

  it('B19 an event with an amount past 2^63-1 is never encoded', () => {
    const event = {
      type: 'CapabilityIssued',
      event_id: 'cap_child:issued',
      data: {
        capability_id: 'cap_child',
        root_id: 'cap_root',
        parent_id: 'cap_root',
        subject_public_key: 'A'.repeat(43),
        issued_at_ms: 1,
        expires_at_ms: 2,
        grants: [{ server_id: 's', tool_name: 't', parent_grant_index: 0 }],
        budget_units: AMOUNT_MAX_UNITS + 1n,
        depth: 1,
      },
    } as BudgetEvent;
    const message = toMessage(event, 'cap_root', '2026-01-01T00:00:00.000Z');
    expect(() => registry.encode(message)).toThrow(/budget_units/);
  });

  it('ADR 0044 the wire, the budget domain and the pricing domain share one largest amount, 2^63-1', () => {
    expect(AMOUNT_MAX_UNITS).toBe(2n ** 63n - 1n);
    expect(DOMAIN_AMOUNT_MAX).toBe(AMOUNT_MAX_UNITS);
    expect(PRICING_AMOUNT_MAX).toBe(AMOUNT_MAX_UNITS);
    expect(COUNT_MAX).toBe(2 ** 53 - 1);
  });
});
