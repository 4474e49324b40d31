// B20 and B21 (ADR 0059): holds that no run will ever finish. A hold captured and never
// admitted whose Admit command is already answered (the run that captured it died before
// its answer or its unwind committed, or lost the receipt race to another run's denial): no
// re-send resumes it, because a re-sent command gets its recorded answer. And a closed hold
// whose runtime lease was never released (its run died between the undo and the release).
// Both wait for the hold's TTL, far longer than any live run of its Admit takes.
import type { Hold } from './model.js';
import type { TreeState } from './state.js';

/** Payment states a sweep may act on: nothing held, or an authorization it can release. The rest are the reconciler's. */
const SWEEPABLE_PAYMENT = new Set(['none', 'declined', 'insufficient_funds', 'released', 'refunded', 'authorized']);

const CLOSED = new Set(['reversed', 'cancelled', 'released', 'settled', 'retained']);

/** The verdict of the receipt that answered `commandId`, if any. */
function answerOf(state: TreeState, commandId: string | undefined): string | undefined {
  const receiptId = commandId === undefined ? undefined : state.command_receipts.get(commandId);
  const receipt = receiptId === undefined ? undefined : state.receipts.get(receiptId);
  return receipt === undefined ? undefined : String(receipt.body['verdict']);
}

function hasOpenAmbiguity(state: TreeState, holdId: string): boolean {
  for (const a of state.ambiguities.values()) if (a.hold_id === holdId && a.resolution === undefined) return true;
  return false;
}

/** Captured, never admitted, its command answered with a denial, past its TTL, and nothing for the reconciler to resolve first. */
export function isStrandedCapture(state: TreeState, hold: Hold, nowMs: number): boolean {
  return (
    hold.status === 'captured' &&
    !hold.admitted &&
    hold.expires_at_ms <= nowMs &&
    answerOf(state, hold.command_id) === 'deny' &&
    SWEEPABLE_PAYMENT.has(hold.payment.status) &&
    !hasOpenAmbiguity(state, hold.hold_id)
  );
}

/** Closed past its TTL with a lease that no release was ever recorded for. */
export function hasOrphanedLease(hold: Hold, nowMs: number): boolean {
  return (
    CLOSED.has(hold.status) &&
    hold.lease_id !== undefined &&
    !hold.lease_released &&
    hold.lease_release_failed === undefined &&
    hold.expires_at_ms <= nowMs
  );
}

export interface StrandedHolds {
  readonly captures: readonly Hold[];
  readonly leases: readonly Hold[];
}

/** What the sweep finishes in one visit of a tree at `nowMs`, at most `holdsMax` of each kind. */
export function strandedHolds(state: TreeState, nowMs: number, holdsMax: number): StrandedHolds {
  const captures: Hold[] = [];
  const leases: Hold[] = [];
  for (const hold of state.holds.values()) {
    if (captures.length >= holdsMax && leases.length >= holdsMax) break;
    if (captures.length < holdsMax && isStrandedCapture(state, hold, nowMs)) captures.push(hold);
    else if (leases.length < holdsMax && hasOrphanedLease(hold, nowMs)) leases.push(hold);
  }
  return { captures, leases };
}
