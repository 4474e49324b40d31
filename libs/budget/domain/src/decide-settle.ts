// Admission, settlement and the records around them: payment steps, leases, nonces,
// ambiguities and receipts. Each is a fact the application learned from a port.
import { assert, maxBig } from './assert.js';
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
import type { BudgetEvent } from './events.js';
import { EventIds, ambiguityId } from './ids.js';
import { committedOf, currencyMismatch, type Hold } from './model.js';
import { chainIndexOf, receiptChainKey, receiptChainOf } from './receipt-chain.js';
import { limitedUsageOf, type TreeState } from './state.js';

const TERMINAL = new Set(['settled', 'retained', 'released', 'cancelled', 'reversed']);

export function decideAdmit(command: AdmitInvocation, state: TreeState): Decision {
  const hold = state.holds.get(command.hold_id);
  if (!hold) return reject('hold_unknown', `hold ${command.hold_id} is unknown`);
  // F1 (B8): one admission per hold. A re-run of the command that admitted it never gets here:
  // its receipt is answered first (writeReceipt), so this refuses only another command's allow.
  if (hold.admitted) return reject('already_admitted', `hold ${hold.hold_id} was already admitted`);
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
  const mismatch = currencyMismatch(hold, outcome.currency);
  if (mismatch) return reject('currency_mismatch', mismatch);
  const spend = spendFor(hold, outcome.cost_units);
  const settled: BudgetEvent = {
    type: 'SpendSettled',
    event_id: EventIds.settle(hold.hold_id),
    data: {
      ...spend,
      hold_id: hold.hold_id,
      at_ms: command.now_ms,
      ...(command.tokens_used === undefined ? {} : { tokens_used: command.tokens_used }),
    },
  };
  if (spend.hold_overrun_units === 0n) return accept(settled);
  return accept(settled, overrunEvent(state, hold, spend.realized_units, command.now_ms));
}

/**
 * B4: a reversible hold records reconcile = min(actual, exposed); a prepaid-final payment or
 * an overrun records the full charge. B19 (ADR 0043): the ledger never says less was spent
 * than the provider billed, so the whole charge is booked even when it passes a limit; the
 * part beyond the hold is the overrun, and the grant refuses admissions until its limit
 * covers the spend. `overrun_units` (what the limits did not book) stays 0 since.
 */
export function spendFor(hold: Hold, actual: bigint) {
  const exposure = hold.exposure_units;
  const prepaid = hold.payment.mode === 'prepaid_final';
  const charge = prepaid ? maxBig(actual, exposure) : actual;
  const kind: 'capture_spend' | 'reconcile_spend' = prepaid || actual > exposure ? 'capture_spend' : 'reconcile_spend';
  return {
    kind,
    actual_units: actual,
    realized_units: charge,
    overrun_units: 0n,
    hold_overrun_units: maxBig(0n, charge - exposure),
  };
}

/** The alert of an overrun, with the figures of the hold's own grant once the charge is booked. */
export function overrunEvent(state: TreeState, hold: Hold, charge: bigint, atMs: number): BudgetEvent {
  const own = hold.chain[0]!;
  const grant = state.capabilities.get(own.capability_id)!.grants[own.grant_index]!;
  const period = hold.periods?.[0] ?? null;
  const before = committedOf(limitedUsageOf(state, own, period?.start_ms));
  return {
    type: 'BudgetOverrun',
    event_id: EventIds.overrun(hold.hold_id),
    data: {
      capability_id: own.capability_id,
      grant_index: own.grant_index,
      hold_id: hold.hold_id,
      realized_units: charge,
      exposure_units: hold.exposure_units,
      hold_overrun_units: charge - hold.exposure_units,
      ...(hold.currency === undefined ? {} : { currency: hold.currency }),
      committed_units: before - hold.exposure_units + charge,
      ...(grant.max_total_cost_units === undefined ? {} : { limit_units: grant.max_total_cost_units }),
      ...(period === null ? {} : { period_start_ms: period.start_ms, period_end_ms: period.end_ms }),
      at_ms: atMs,
    },
  };
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
  // One release fact per lease (its event id): once one is recorded, released or failed, another adds nothing.
  if (
    command.outcome !== 'reserved' &&
    hold.lease_id === command.lease_id &&
    (hold.lease_released || hold.lease_release_failed)
  )
    return accept();
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

/**
 * F2 (B20, ADR 0058): an Admit is never denied while a hold its own command captured stands
 * unadmitted with nothing to end it (no open ambiguity for the reconciler). That capture was
 * made by another run of the command (a re-send that overtook a run now denying, say); if
 * the deny landed, that run's crash would leave the hold captured for good. Refused, the
 * denying run fails its send, and the caller's re-send goes on from the capture. Only the
 * deny of an Admit whose command captured pays for the scan of the tree's ambiguities.
 */
function outstandingCapture(command: RecordReceipt, state: TreeState): string | undefined {
  const body = command.receipt;
  if (command.resumable !== true || body['verdict'] !== 'deny' || command.request_id === undefined) return undefined;
  const holdId = state.requests.get(command.request_id);
  const hold = holdId === undefined ? undefined : state.holds.get(holdId);
  if (!hold || hold.status !== 'captured' || hold.admitted || hold.captured_by !== command.command_id) return undefined;
  for (const ambiguity of state.ambiguities.values())
    if (ambiguity.hold_id === hold.hold_id && ambiguity.resolution === undefined) return undefined;
  return hold.hold_id;
}

export function decideReceipt(command: RecordReceipt, state: TreeState): Decision {
  if (state.command_receipts.has(command.command_id) || state.receipts.has(command.receipt_id))
    return reject('command_already_answered', `command ${command.command_id} already has a receipt`);
  const outstanding = outstandingCapture(command, state);
  if (outstanding !== undefined)
    return reject(
      'capture_outstanding',
      `command ${command.command_id} captured hold ${outstanding} in another run and is not denied while that capture stands`,
    );
  // The writer took the index from this very state, so another one is a bug, not contention.
  const index = chainIndexOf(command.receipt);
  const chain = receiptChainOf(state, receiptChainKey(command.receipt['capability_id']));
  assert(index === undefined || index === chain.next_index, `receipt ${command.receipt_id} is out of its chain`);
  const { type: _type, now_ms, resumable: _resumable, ...fields } = command;
  return accept({
    type: 'ReceiptRecorded',
    event_id: EventIds.receipt(command.receipt_id),
    data: { ...fields, at_ms: now_ms },
  });
}
