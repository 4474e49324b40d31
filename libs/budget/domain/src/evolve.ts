// evolve(state, event) -> state: the only place a fact changes the tree. Budget
// mutations assert the tree's limits before and after they apply (TigerBeetle style).
import { assertEventAmounts, assertUsageAmounts } from './amounts.js';
import { assert, assertAmount } from './assert.js';
import type {
  CapabilityIssuedData,
  HoldAuthorizedData,
  PaymentStepRecordedData,
  RecordedBudgetEvent,
  SpendCorrectedData,
} from './events.js';
import { addPeriodUsage, enterWindows, growWindows, leaveWindows } from './evolve-policy.js';
import { assertChainWithinLimits, assertSiblingShares } from './invariants.js';
import { storedEventId } from './ids.js';
import { chainOnIssue, chainOnReceipt } from './receipt-chain.js';
import type { Capability, Hold, HoldPayment, MutationKind, PaymentStatus } from './model.js';
import { spendOf, usageKey, usageOf, type TreeState } from './state.js';

export function evolve(state: TreeState, event: RecordedBudgetEvent): TreeState {
  // The events of one commit share its index and ascend by position; nothing is applied twice or out of order.
  const position = event.commit_position ?? 0;
  const advances =
    event.commit_index > state.last_commit_index ||
    (event.commit_index === state.last_commit_index && position > state.last_commit_position);
  assert(
    advances,
    `commit index ${event.commit_index}/${position} does not advance past ${state.last_commit_index}/${state.last_commit_position}`,
  );
  assertEventAmounts(event);
  return { ...apply(state, event), last_commit_index: event.commit_index, last_commit_position: position };
}

function apply(state: TreeState, event: RecordedBudgetEvent): TreeState {
  switch (event.type) {
    case 'CapabilityIssued':
      return chainOnIssue(issueCapability(state, event.data), event.event_id, event.data);
    case 'CapabilityRevoked':
      return revoke(state, event.data.revoked_ids, event.data.at_ms);
    case 'HoldAuthorized':
      return authorizeHold(state, event.data, event.event_id, event.commit_index);
    case 'InvocationCaptured': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'authorized', `capture of ${hold.hold_id} in status ${hold.status}`);
      const eventId = storedEventId(event.type, event.event_id, event.data, event.commit_index);
      const captured: Hold = {
        ...hold,
        status: 'captured',
        capture_event_id: eventId,
        capture_commit_index: event.commit_index,
        ...(event.data.command_id === undefined ? {} : { captured_by: event.data.command_id }),
      };
      return mutate(state, captured, {
        kind: event.data.kind,
        eventId,
        commitIndex: event.commit_index,
        atMs: event.data.at_ms,
        inv: 0,
        exp: 0n,
        real: 0n,
      });
    }
    case 'HoldReversed': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'authorized', `reverse of ${hold.hold_id} in status ${hold.status}`);
      const closed = leaveWindows(state, { ...hold, status: 'reversed' }, 0);
      return undoHold(closed.state, closed.hold, event.data.kind, event);
    }
    case 'CaptureCancelled': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'captured', `cancellation of ${hold.hold_id} in status ${hold.status}`);
      const closed = leaveWindows(state, { ...hold, status: 'cancelled' }, 0);
      return undoHold(closed.state, closed.hold, event.data.kind, event);
    }
    case 'ExposureReleased': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'captured' && hold.admitted, `release of ${hold.hold_id} in status ${hold.status}`);
      const closed = leaveWindows(state, { ...hold, status: 'released' }, 0);
      return undoHold(closed.state, closed.hold, event.data.kind, event);
    }
    case 'SpendSettled': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'captured' && hold.admitted, `settlement of ${hold.hold_id} in status ${hold.status}`);
      const cause = event.data.cause;
      assert(
        cause === undefined || event.data.realized_units === hold.exposure_units,
        `the sweep booked ${hold.hold_id} short of its exposure`,
      );
      const settled: Hold = { ...hold, status: 'settled', realized_units: event.data.realized_units };
      const closed = leaveWindows(
        state,
        cause === undefined ? settled : { ...settled, settlement_cause: cause },
        event.data.tokens_used,
      );
      // Events from before ADR 0043 carry no hold_overrun_units: they booked within the limits and count no overrun.
      const over = event.data.hold_overrun_units ?? 0n;
      assert(
        over === 0n || event.data.realized_units === hold.exposure_units + over,
        `overrun of ${hold.hold_id} does not add up`,
      );
      const delta = { inv: 0, exp: -hold.exposure_units, real: event.data.realized_units, over };
      return mutate(closed.state, closed.hold, {
        kind: event.data.kind,
        eventId: event.event_id,
        commitIndex: event.commit_index,
        atMs: event.data.at_ms,
        ...delta,
      });
    }
    case 'SpendCorrected':
      return correctSpend(state, event.data, event.event_id, event.commit_index);
    case 'HoldRetained': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'captured' && hold.admitted, `retention of ${hold.hold_id} in status ${hold.status}`);
      // Failed after dispatch: what it used is unknown, so it keeps counting its worst case (B5).
      const closed = leaveWindows(state, { ...hold, status: 'retained' }, undefined);
      return withHold(closed.state, closed.hold);
    }
    case 'InvocationAdmitted': {
      const hold = holdOf(state, event.data.hold_id);
      assert(hold.status === 'captured' && !hold.admitted, `admission of ${hold.hold_id} in status ${hold.status}`);
      return withHold(state, { ...hold, admitted: true });
    }
    case 'LeaseReserved':
      return withHold(state, { ...holdOf(state, event.data.hold_id), lease_id: event.data.lease_id });
    case 'LeaseReleased':
      return withHold(state, {
        ...holdOf(state, event.data.hold_id),
        lease_released: event.data.outcome === 'released',
        ...(event.data.outcome === 'released' ? {} : { lease_release_failed: true as const }),
      });
    case 'PaymentStepRecorded':
      return recordPayment(state, event.data);
    case 'NonceIssued': {
      const nonces = state.nonces.with(event.data.nonce_id, {
        nonce_id: event.data.nonce_id,
        binding: event.data.binding,
        expires_at_ms: event.data.expires_at_ms,
      });
      return { ...state, nonces };
    }
    case 'NonceConsumed': {
      assert(
        state.nonces.get(event.data.nonce_id)?.consumed_by === undefined,
        `nonce ${event.data.nonce_id} consumed twice`,
      );
      const nonces = state.nonces.with(event.data.nonce_id, {
        nonce_id: event.data.nonce_id,
        binding: event.data.binding,
        expires_at_ms: event.data.expires_at_ms,
        consumed_by: event.data.binding.request_id,
      });
      return { ...state, nonces };
    }
    case 'AmbiguityRecorded': {
      const { at_ms: _at, ...ambiguity } = event.data;
      return { ...state, ambiguities: new Map(state.ambiguities).set(ambiguity.ambiguity_id, ambiguity) };
    }
    case 'AmbiguityResolved': {
      const existing = state.ambiguities.get(event.data.ambiguity_id);
      assert(
        existing !== undefined && existing.resolution === undefined,
        `resolution of unknown or resolved ambiguity ${event.data.ambiguity_id}`,
      );
      return {
        ...state,
        ambiguities: new Map(state.ambiguities).set(existing.ambiguity_id, {
          ...existing,
          resolution: event.data.resolution,
        }),
      };
    }
    case 'HoldIncreased': {
      const hold = holdOf(state, event.data.hold_id);
      assert(
        hold.status === 'authorized' || (hold.status === 'captured' && !hold.preflight),
        `increase of ${hold.hold_id} in status ${hold.status}`,
      );
      assert(
        event.data.exposure_units === hold.exposure_units + event.data.amount_units,
        `increase of ${hold.hold_id} does not add up`,
      );
      const grown = growWindows(state, hold, event.data.tokens ?? 0);
      const increased: Hold = {
        ...grown.hold,
        exposure_units: event.data.exposure_units,
        increases: (hold.increases ?? 0) + 1,
      };
      return mutate(grown.state, increased, {
        kind: 'increase_exposure',
        eventId: event.event_id,
        commitIndex: event.commit_index,
        atMs: event.data.at_ms,
        inv: 0,
        exp: event.data.amount_units,
        real: 0n,
      });
    }
    case 'BudgetOverrun':
      // A notice of the settlement in its commit: the overrun itself is counted by SpendSettled.
      return state;
    case 'BudgetThresholdCrossed':
    case 'BudgetExhausted':
      // The event id is `alert:{key}`: the key says which threshold of which period fired.
      return { ...state, alerts: state.alerts.with(event.event_id.slice('alert:'.length), true) };
    case 'ReceiptRecorded': {
      const { at_ms: _at, receipt, ...rest } = event.data;
      const record = { ...rest, body: receipt };
      // Persistent: a Map copy per receipt made every Admit on a tree cost more as its history grew.
      const receipts = state.receipts.with(rest.receipt_id, record);
      const next = {
        ...state,
        receipts,
        command_receipts: state.command_receipts.with(rest.command_id, rest.receipt_id),
      };
      return chainOnReceipt(next, record);
    }
  }
}

/** A late settlement moves a swept hold's realized spend to what it reported (ADR 0047), once. */
function correctSpend(state: TreeState, d: SpendCorrectedData, eventId: string, commitIndex: number): TreeState {
  const hold = holdOf(state, d.hold_id);
  assert(
    hold.status === 'settled' && hold.settlement_cause !== undefined && !hold.corrected,
    `correction of ${hold.hold_id}, which the sweep did not settle or which was corrected already`,
  );
  assert(d.previous_realized_units === hold.realized_units, `correction of ${hold.hold_id} from another spend`);
  const over = d.hold_overrun_units;
  assert(over === 0n || d.realized_units === hold.exposure_units + over, `overrun of ${hold.hold_id} does not add up`);
  const real = d.realized_units - d.previous_realized_units;
  const corrected: Hold = { ...hold, realized_units: d.realized_units, corrected: true };
  return mutate(state, corrected, {
    kind: d.kind,
    eventId,
    commitIndex,
    atMs: d.at_ms,
    inv: d.invocation_delta,
    exp: 0n,
    real,
    over,
  });
}

function issueCapability(state: TreeState, data: CapabilityIssuedData): TreeState {
  assert(!state.capabilities.has(data.capability_id), `capability ${data.capability_id} issued twice`);
  const capability: Capability = { ...data, id: data.capability_id, children: [] };
  const capabilities = new Map(state.capabilities).set(capability.id, capability);
  if (data.parent_id !== undefined) {
    const parent = state.capabilities.get(data.parent_id);
    assert(parent !== undefined, `delegation from unknown parent ${data.parent_id}`);
    capabilities.set(parent.id, { ...parent, children: [...parent.children, capability.id] });
  }
  const next: TreeState = { ...state, root_id: state.root_id ?? data.root_id, capabilities };
  if (data.parent_id !== undefined) assertSiblingShares(next, data.parent_id);
  return next;
}

function revoke(state: TreeState, ids: readonly string[], atMs: number): TreeState {
  const capabilities = new Map(state.capabilities);
  for (const id of ids) {
    const capability = capabilities.get(id);
    assert(capability !== undefined, `revocation of unknown capability ${id}`);
    if (capability.revoked_at_ms === undefined) capabilities.set(id, { ...capability, revoked_at_ms: atMs });
  }
  return { ...state, capabilities };
}

function authorizeHold(state: TreeState, data: HoldAuthorizedData, eventId: string, commitIndex: number): TreeState {
  assert(!state.holds.has(data.hold_id), `hold ${data.hold_id} authorized twice`);
  const { kind: _kind, at_ms: _at, ...fields } = data;
  const hold: Hold = {
    ...fields,
    status: 'authorized',
    authorize_commit_index: commitIndex,
    admitted: false,
    payment: { status: 'none', reference: data.request_id, steps: 0 },
    lease_released: false,
  };
  const entered = enterWindows(state, hold, data.at_ms);
  const base = entered.state;
  const indexed = data.preflight
    ? { ...base, preflights: base.preflights.with(data.request_id, data.hold_id) }
    : { ...base, requests: base.requests.with(data.request_id, data.hold_id) };
  const mutation = {
    kind: data.kind,
    eventId,
    commitIndex,
    atMs: data.at_ms,
    inv: 1,
    exp: data.exposure_units,
    real: 0n,
  };
  return mutate(indexed, entered.hold, mutation);
}

function undoHold(
  state: TreeState,
  hold: Hold,
  kind: MutationKind,
  event: RecordedBudgetEvent & { data: { at_ms: number } },
): TreeState {
  const mutation = {
    kind,
    eventId: event.event_id,
    commitIndex: event.commit_index,
    atMs: event.data.at_ms,
    inv: -1,
    exp: -hold.exposure_units,
    real: 0n,
  };
  return mutate(state, hold, mutation);
}

interface Mutation {
  readonly kind: MutationKind;
  readonly eventId: string;
  readonly commitIndex: number;
  readonly atMs: number;
  readonly inv: number;
  readonly exp: bigint;
  readonly real: bigint;
  /** The part of `real` a provider billed beyond the hold (ADR 0043). */
  readonly over?: bigint;
}

/** Applies usage deltas to the hold's grant and every ancestor grant, with paired assertions. */
function mutate(state: TreeState, hold: Hold, m: Mutation): TreeState {
  assertChainWithinLimits(state, hold.chain, hold.periods);
  const over = m.over ?? 0n;
  const usage = new Map(state.usage);
  for (const ref of hold.chain) {
    const key = usageKey(ref);
    const before = usageOf(state, ref);
    const after = {
      invocation_count: before.invocation_count + m.inv,
      exposed_cost_units: before.exposed_cost_units + m.exp,
      realized_cost_units: before.realized_cost_units + m.real,
      overrun_cost_units: before.overrun_cost_units + over,
    };
    assertUsageAmounts(after, key);
    usage.set(key, after);
  }
  const spend = new Map(state.spend);
  for (const capabilityId of new Set(hold.chain.map((ref) => ref.capability_id))) {
    const before = spendOf(state, capabilityId);
    const committed = before.committed_units + m.exp + m.real;
    assertAmount(committed, `committed spend of ${capabilityId}`);
    const overrun = before.overrun_units + over;
    assertAmount(overrun, `overrun of ${capabilityId}`);
    spend.set(capabilityId, {
      invocation_count: before.invocation_count + m.inv,
      committed_units: committed,
      overrun_units: overrun,
    });
  }
  const own = hold.chain[0]!;
  const record = {
    event_id: m.eventId,
    kind: m.kind,
    hold_id: hold.hold_id,
    request_id: hold.request_id,
    capability_id: own.capability_id,
    grant_index: own.grant_index,
    commit_index: m.commitIndex,
    at_ms: m.atMs,
    invocation_delta: m.inv,
    exposed_delta_units: m.exp,
    realized_delta_units: m.real,
  };
  const mutations = new Map(state.mutations).set(usageKey(own), [
    ...(state.mutations.get(usageKey(own)) ?? []),
    record,
  ]);
  const period_usage = addPeriodUsage(state, hold, m);
  const next = { ...withHold(state, hold), usage, spend, mutations, period_usage };
  // A new hold or a raised one must fit under every limit; only a settled overrun may pass one.
  assertChainWithinLimits(next, hold.chain, hold.periods, m.inv > 0 || m.exp > 0n);
  return next;
}

const PAYMENT_STATUS: Readonly<Record<PaymentStepRecordedData['step'], PaymentStatus>> = {
  authorized: 'authorized',
  declined: 'declined',
  insufficient_funds: 'insufficient_funds',
  ambiguous: 'ambiguous',
  captured: 'captured',
  capture_failed: 'capture_failed',
  released: 'released',
  release_pending: 'release_pending',
  release_failed: 'release_failed',
  refunded: 'refunded',
};

function recordPayment(state: TreeState, data: PaymentStepRecordedData): TreeState {
  const hold = holdOf(state, data.hold_id);
  const payment: HoldPayment = {
    ...hold.payment,
    status: PAYMENT_STATUS[data.step],
    steps: hold.payment.steps + 1,
    ...(data.authorization_id === undefined ? {} : { authorization_id: data.authorization_id }),
    ...(data.mode === undefined ? {} : { mode: data.mode }),
    ...(data.rail_reference === undefined ? {} : { rail_reference: data.rail_reference }),
  };
  return withHold(state, { ...hold, payment });
}

function holdOf(state: TreeState, id: string): Hold {
  const hold = state.holds.get(id);
  assert(hold !== undefined, `event for unknown hold ${id}`);
  return hold;
}

function withHold(state: TreeState, hold: Hold): TreeState {
  return { ...state, holds: state.holds.with(hold.hold_id, hold) };
}
