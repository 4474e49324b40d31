// Admission, settlement and the records around them: payment steps, leases, nonces,
// ambiguities and receipts. Each is a fact the application learned from a port.
import { assert, minBig, maxBig } from './assert.js';
import type {
  AdmitInvocation,
  ConsumeNonce,
  IssueNonce,
  RecordAmbiguity,
  RecordLease,
  RecordPaymentStep,
  RecordReceipt,
  ResolveAmbiguity,
  SettleHold,
} from './commands.js';
import { accept, reject, type Decision } from './decision.js';
import { EventIds, ambiguityId } from './ids.js';
import { committedOf, type Hold } from './model.js';
import { chainIndexOf, receiptChainKey, receiptChainOf } from './receipt-chain.js';
import { limitedUsageOf, spendOf, type TreeState } from './state.js';

const TERMINAL = new Set(['settled', 'retained', 'released', 'cancelled', 'reversed']);

export function decideAdmit(command: AdmitInvocation, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (hold.admitted) return accept();
  if (hold.status !== 'captured')
    return reject('hold_not_captured', `hold ${hold.hold_id} is ${hold.status}, not captured`);
  return accept({
    type: 'InvocationAdmitted',
    event_id: EventIds.admitted(hold.hold_id),
    data: { hold_id: hold.hold_id, at_ms: command.now_ms },
  });
}

export function decideConsumeNonce(command: ConsumeNonce, state: TreeState): Decision {
  const existing = state.nonces.get(command.nonce.nonce_id);
  if (existing?.consumed_by !== undefined)
    return reject('nonce_already_consumed', 'execution nonce was already consumed');
  if (command.nonce.expires_at_ms <= command.now_ms) return reject('nonce_expired', 'execution nonce expired');
  return accept({
    type: 'NonceConsumed',
    event_id: EventIds.nonceConsumed(command.nonce.nonce_id),
    data: {
      nonce_id: command.nonce.nonce_id,
      binding: command.nonce.binding,
      expires_at_ms: command.nonce.expires_at_ms,
      at_ms: command.now_ms,
    },
  });
}

export function decideIssueNonce(command: IssueNonce, state: TreeState): Decision {
  if (state.nonces.has(command.nonce.nonce_id)) return accept();
  return accept({
    type: 'NonceIssued',
    event_id: EventIds.nonceIssued(command.nonce.nonce_id),
    data: {
      nonce_id: command.nonce.nonce_id,
      hold_id: command.hold_id,
      binding: command.nonce.binding,
      expires_at_ms: command.nonce.expires_at_ms,
      at_ms: command.now_ms,
    },
  });
}

export function decideSettle(command: SettleHold, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  if (TERMINAL.has(hold.status))
    return reject('hold_already_settled', `hold ${hold.hold_id} is already ${hold.status}`);
  if (hold.status !== 'captured' || !hold.admitted)
    return reject('hold_not_admitted', `hold ${hold.hold_id} was never admitted for dispatch`);
  const outcome = command.outcome;
  if (outcome.kind === 'failed_after_dispatch') {
    return accept({
      type: 'HoldRetained',
      event_id: EventIds.retain(hold.hold_id),
      data: { hold_id: hold.hold_id, failure: outcome.failure, at_ms: command.now_ms },
    });
  }
  if (outcome.kind === 'elicitation_required') {
    return accept({
      type: 'ExposureReleased',
      event_id: EventIds.releaseExposure(hold.hold_id),
      data: { kind: 'release_exposure', hold_id: hold.hold_id, at_ms: command.now_ms },
    });
  }
  return accept({
    type: 'SpendSettled',
    event_id: EventIds.settle(hold.hold_id),
    data: {
      ...spendFor(state, hold, outcome.cost_units),
      hold_id: hold.hold_id,
      at_ms: command.now_ms,
      ...(command.tokens_used === undefined ? {} : { tokens_used: command.tokens_used }),
    },
  });
}

/**
 * B4: a reversible hold records reconcile = min(actual, exposed); a prepaid-final payment or
 * an overrun records the full charge. The recorded spend never breaks a limit (B19): what
 * does not fit is kept as overrun_units for audit instead of being booked.
 */
export function spendFor(state: TreeState, hold: Hold, actual: bigint) {
  const exposure = hold.exposure_units;
  const prepaid = hold.payment.mode === 'prepaid_final';
  const charge = prepaid ? maxBig(actual, exposure) : actual;
  const room = headroom(state, hold);
  const realized = room === undefined ? charge : minBig(charge, room);
  const kind: 'capture_spend' | 'reconcile_spend' = prepaid || actual > exposure ? 'capture_spend' : 'reconcile_spend';
  return { kind, actual_units: actual, realized_units: realized, overrun_units: charge - realized };
}

/** The most this hold may realize: its exposure plus the free room on every limit of its chain. */
function headroom(state: TreeState, hold: Hold): bigint | undefined {
  let room: bigint | undefined;
  const take = (value: bigint) => (room = room === undefined ? value : minBig(room, value));
  for (const [index, ref] of hold.chain.entries()) {
    const capability = state.capabilities.get(ref.capability_id)!;
    const grant = capability.grants[ref.grant_index]!;
    // Spend lands in the period the hold was authorized in, whenever it settles.
    const usage = limitedUsageOf(state, ref, hold.periods?.[index]?.start_ms);
    if (grant.max_total_cost_units !== undefined)
      take(grant.max_total_cost_units - committedOf(usage) + hold.exposure_units);
    if (capability.budget_units !== undefined)
      take(capability.budget_units - spendOf(state, capability.id).committed_units + hold.exposure_units);
  }
  return room;
}

export function decidePaymentStep(command: RecordPaymentStep, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  const p = command.payment;
  return accept({
    type: 'PaymentStepRecorded',
    event_id: EventIds.paymentStep(hold.hold_id, p.step, hold.payment.steps + 1),
    data: { hold_id: hold.hold_id, reference: hold.payment.reference, ...p, at_ms: command.now_ms },
  });
}

export function decideLease(command: RecordLease, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  // The same lease fact twice is one fact: its event id would be dropped as a duplicate anyway.
  if (command.outcome === 'reserved' && hold.lease_id === command.lease_id) return accept();
  if (command.outcome === 'released' && hold.lease_id === command.lease_id && hold.lease_released) return accept();
  if (command.outcome === 'reserved') {
    return accept({
      type: 'LeaseReserved',
      event_id: EventIds.leaseReserved(command.hold_id, command.lease_id),
      data: { hold_id: command.hold_id, lease_id: command.lease_id, at_ms: command.now_ms },
    });
  }
  return accept({
    type: 'LeaseReleased',
    event_id: EventIds.leaseReleased(command.hold_id, command.lease_id),
    data: { hold_id: command.hold_id, lease_id: command.lease_id, outcome: command.outcome, at_ms: command.now_ms },
  });
}

export function decideAmbiguity(command: RecordAmbiguity, state: TreeState): Decision {
  let ordinal = 1;
  for (const a of state.ambiguities.values()) if (a.hold_id === command.hold_id && a.kind === command.kind) ordinal++;
  const id = ambiguityId(command.kind, command.hold_id, ordinal);
  const { type: _type, now_ms, ...fields } = command;
  return accept({
    type: 'AmbiguityRecorded',
    event_id: EventIds.ambiguityRecorded(id),
    data: { ...fields, ambiguity_id: id, at_ms: now_ms },
  });
}

export function decideResolve(command: ResolveAmbiguity, state: TreeState): Decision {
  const ambiguity = state.ambiguities.get(command.ambiguity_id);
  if (!ambiguity || ambiguity.resolution !== undefined)
    return reject('ambiguity_unknown', `no open ambiguity ${command.ambiguity_id}`);
  const { type: _type, now_ms, ...fields } = command;
  return accept({
    type: 'AmbiguityResolved',
    event_id: EventIds.ambiguityResolved(ambiguity.ambiguity_id),
    data: { ...fields, at_ms: now_ms },
  });
}

export function decideReceipt(command: RecordReceipt, state: TreeState): Decision {
  if (state.command_receipts.has(command.command_id) || state.receipts.has(command.receipt_id))
    return reject('command_already_answered', `command ${command.command_id} already has a receipt`);
  // The writer took the index from this very state, so another one is a bug, not contention.
  const index = chainIndexOf(command.receipt);
  const chain = receiptChainOf(state, receiptChainKey(command.receipt['capability_id']));
  assert(index === undefined || index === chain.next_index, `receipt ${command.receipt_id} is out of its chain`);
  const { type: _type, now_ms, ...fields } = command;
  return accept({
    type: 'ReceiptRecorded',
    event_id: EventIds.receipt(command.receipt_id),
    data: { ...fields, at_ms: now_ms },
  });
}
