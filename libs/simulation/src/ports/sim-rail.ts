// The simulated payment rail, as a server shared by every authority replica: idempotent by
// reference (the request id), as a real rail is with idempotency keys, and keeping what it
// did per reference, so the checker can hold the ledger to it. Its faults are those of a
// real rail: definite declines, answers that confirm nothing (given before or after it
// acted), releases left pending that complete later, and settlement queries that fail.
import type {
  PaymentAuthorizeRequest,
  PaymentAuthorizeResult,
  PaymentResult,
  SettlementState,
} from '@tally/budget-application';
import type { PaymentMode } from '@tally/budget-domain';
import type { Faults } from '../world/faults.js';

export type RailState = 'authorized' | 'captured' | 'released' | 'refunded' | 'pending' | 'declined';

/** What the rail did for one reference. */
export interface RailEntry {
  state: RailState;
  readonly authorization_id: string;
  readonly amount_units: bigint;
  captured_units: bigint;
  /** Effective actions: each moved money (or a hold on it) once. */
  authorizations: number;
  captures: number;
  releases: number;
  refunds: number;
  /** When a pending release completes. */
  pending_until_ms?: number;
}

export interface RailViolation {
  readonly reference: string;
  readonly detail: string;
}

export class SimRail {
  readonly entries = new Map<string, RailEntry>();
  readonly violations: RailViolation[] = [];

  constructor(
    readonly mode: PaymentMode,
    private readonly faults: Faults,
    private readonly nowMs: () => number,
  ) {}

  authorize(request: PaymentAuthorizeRequest): PaymentAuthorizeResult {
    const known = this.entries.get(request.reference);
    if (known && known.state !== 'declined')
      return { outcome: 'authorized', authorization_id: known.authorization_id, mode: this.mode };
    if (known) return { outcome: 'declined', detail: 'declined before' };
    if (this.faults.strikes('rail')) {
      const variant = this.faults.draw.int(5);
      if (variant === 0) return this.decline(request, { outcome: 'declined', detail: 'simulated decline' });
      if (variant === 1) return this.decline(request, { outcome: 'insufficient_funds' });
      if (variant === 2) return { outcome: 'unavailable', detail: 'simulated rail unavailable' };
      if (variant === 3) return { outcome: 'rail_error', detail: 'simulated lost answer before the rail acted' };
      this.approve(request);
      return { outcome: 'rail_error', detail: 'simulated lost answer after the rail authorized' };
    }
    return { outcome: 'authorized', authorization_id: this.approve(request).authorization_id, mode: this.mode };
  }

  capture(request: { authorization_id: string; amount_units: bigint; reference: string }): PaymentResult {
    const entry = this.entryFor(request.reference, request.authorization_id, 'capture');
    if (!entry) return { outcome: 'failed', detail: 'no such authorization' };
    if (entry.state === 'captured') return { outcome: 'settled', rail_reference: `capture_${request.reference}` };
    if (entry.state !== 'authorized') {
      this.violation(request.reference, `capture of an authorization that is ${entry.state}`);
      return { outcome: 'failed', detail: `authorization is ${entry.state}` };
    }
    if (request.amount_units > entry.amount_units)
      this.violation(request.reference, `capture of ${request.amount_units} above ${entry.amount_units}`);
    const fault = this.faults.strikes('rail') ? this.faults.draw.int(3) : -1;
    if (fault === 0) return { outcome: 'failed', detail: 'simulated capture failure' };
    if (fault === 1) return { outcome: 'rail_error', detail: 'simulated lost answer before the rail captured' };
    entry.state = 'captured';
    entry.captured_units = request.amount_units;
    entry.captures++;
    if (fault === 2) return { outcome: 'rail_error', detail: 'simulated lost answer after the rail captured' };
    return { outcome: 'settled', rail_reference: `capture_${request.reference}` };
  }

  release(request: { authorization_id: string; reference: string }): PaymentResult {
    return this.unwind(request.reference, request.authorization_id, 'released');
  }

  refund(request: { transaction_id: string; reference: string }): PaymentResult {
    return this.unwind(request.reference, request.transaction_id, 'refunded');
  }

  settlementState(reference: string): SettlementState {
    if (this.faults.strikes('rail', 0.3)) return { state: 'unknown', detail: 'simulated query failure' };
    const entry = this.entries.get(reference);
    if (!entry) return { state: 'none' };
    this.completePending(entry);
    return { state: entry.state, authorization_id: entry.authorization_id };
  }

  private unwind(reference: string, authorizationId: string, done: 'released' | 'refunded'): PaymentResult {
    const entry = this.entryFor(reference, authorizationId, done);
    if (!entry) return { outcome: 'failed', detail: 'no such authorization' };
    this.completePending(entry);
    if (entry.state === done) return { outcome: done, rail_reference: `${done}_${reference}` };
    // A release undoes an uncaptured authorization, a refund a captured payment: anything else is refused.
    const from = done === 'released' ? 'authorized' : 'captured';
    if (entry.state !== from && entry.state !== 'pending')
      return {
        outcome: 'failed',
        detail: `cannot ${done === 'released' ? 'release' : 'refund'} a ${entry.state} payment`,
      };
    if (entry.state === 'pending') return { outcome: 'pending', rail_reference: `pending_${reference}` };
    const fault = this.faults.strikes('rail') ? this.faults.draw.int(4) : -1;
    if (fault === 0) return { outcome: 'failed', detail: 'simulated release failure' };
    if (fault === 1) return { outcome: 'rail_error', detail: 'simulated lost answer before the rail released' };
    if (fault === 2) {
      entry.state = 'pending';
      entry.pending_until_ms = this.nowMs() + 1_000 + this.faults.draw.int(20_000);
      entry[done === 'released' ? 'releases' : 'refunds']++;
      return { outcome: 'pending', rail_reference: `pending_${reference}` };
    }
    entry.state = done;
    entry[done === 'released' ? 'releases' : 'refunds']++;
    if (fault === 3) return { outcome: 'rail_error', detail: 'simulated lost answer after the rail released' };
    return { outcome: done, rail_reference: `${done}_${reference}` };
  }

  /** A pending release completes once its time has come, as a release with a settlement delay does. */
  private completePending(entry: RailEntry): void {
    if (entry.state !== 'pending' || entry.pending_until_ms === undefined) return;
    if (this.nowMs() < entry.pending_until_ms) return;
    entry.state = entry.refunds > 0 ? 'refunded' : 'released';
    entry.pending_until_ms = undefined;
  }

  private approve(request: PaymentAuthorizeRequest): RailEntry {
    const entry: RailEntry = {
      state: this.mode === 'prepaid_final' ? 'captured' : 'authorized',
      authorization_id: `auth_${request.reference}`,
      amount_units: request.amount_units,
      captured_units: this.mode === 'prepaid_final' ? request.amount_units : 0n,
      authorizations: 1,
      captures: 0,
      releases: 0,
      refunds: 0,
    };
    this.entries.set(request.reference, entry);
    return entry;
  }

  private decline<T extends PaymentAuthorizeResult>(request: PaymentAuthorizeRequest, result: T): T {
    this.entries.set(request.reference, {
      state: 'declined',
      authorization_id: `auth_${request.reference}`,
      amount_units: 0n,
      captured_units: 0n,
      authorizations: 0,
      captures: 0,
      releases: 0,
      refunds: 0,
    });
    return result;
  }

  private entryFor(reference: string, authorizationId: string, action: string): RailEntry | undefined {
    const entry = this.entries.get(reference);
    if (!entry || entry.authorization_id !== authorizationId || entry.state === 'declined') {
      this.violation(reference, `${action} of ${authorizationId}, which the rail never authorized`);
      return undefined;
    }
    return entry;
  }

  private violation(reference: string, detail: string): void {
    this.violations.push({ reference, detail });
  }
}
