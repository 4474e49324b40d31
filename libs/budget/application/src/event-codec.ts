// Domain events <-> the event envelope. Money is bigint in the domain and a JSON number
// (or a decimal string above 2^53-1) on the wire; the money fields are named here once.
// Receipt bodies and decision extras are already JSON and pass through untouched, so a
// replayed receipt has exactly the bytes that were signed.
import { moneyFromWire, moneyToWire, type EventMessage } from '@tally/contracts';
import { storedEventId, type BudgetEvent, type RecordedBudgetEvent } from '@tally/budget-domain';
import type { StoredEvent } from '@tally/eventing';

export const MONEY_FIELDS: ReadonlySet<string> = new Set([
  'exposure_units',
  'amount_units',
  'actual_units',
  'realized_units',
  'previous_realized_units',
  'overrun_units',
  'hold_overrun_units',
  'budget_units',
  'max_cost_per_invocation',
  'max_total_cost_units',
  'hold_cap_units',
  'committed_units',
  'limit_units',
]);
const OPAQUE_FIELDS: ReadonlySet<string> = new Set(['receipt', 'decision']);

export function toMessage(event: BudgetEvent, rootId: string, occurredAt: string): Omit<EventMessage, 'schemaVersion'> {
  return {
    eventId: event.event_id,
    type: event.type,
    aggregateId: rootId,
    occurredAt,
    payload: toWire(event.data) as Record<string, unknown>,
  };
}

export function fromStored(stored: StoredEvent): RecordedBudgetEvent {
  const data = fromWire(stored.event.payload);
  return {
    type: stored.event.type,
    event_id: storedEventId(stored.event.type, stored.event.eventId, data, stored.sequence),
    data,
    commit_index: stored.sequence,
    commit_position: stored.position ?? 0,
  } as RecordedBudgetEvent;
}

/** A domain value in wire form: what the stream holds for it. */
export function toWire(value: unknown): unknown {
  if (typeof value === 'bigint') return moneyToWire(value);
  if (Array.isArray(value)) return value.map(toWire);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value))
      if (item !== undefined) out[key] = OPAQUE_FIELDS.has(key) ? item : toWire(item);
    return out;
  }
  return value;
}

function fromWire(value: unknown, key?: string): never {
  if (key !== undefined && MONEY_FIELDS.has(key)) {
    const money = moneyFromWire(value);
    if (money === undefined) throw new Error(`field ${key} is not an amount of minor units`);
    return money as never;
  }
  if (Array.isArray(value)) return value.map((item) => fromWire(item)) as never;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(value)) out[k] = OPAQUE_FIELDS.has(k) ? item : fromWire(item, k);
    return out as never;
  }
  return value as never;
}
