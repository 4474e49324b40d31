// The simulated payment rail: the same port a real rail adapter implements, with
// failures configurable globally or per reference (the request id), and call counters.
// Tests and the local stack use it; it approves by default.
//
// The result shapes mirror the PaymentRail port of @tally/budget-application. They are
// declared here again because a platform library may not import the application layer;
// the type checker proves the two match wherever the rail is wired into the authority.

export type PaymentMode = 'reversible_hold' | 'prepaid_final';

export type PaymentAuthorizeResult =
  | { readonly outcome: 'authorized'; readonly authorization_id: string; readonly mode: PaymentMode }
  | { readonly outcome: 'declined'; readonly detail: string }
  | { readonly outcome: 'insufficient_funds' }
  | { readonly outcome: 'unavailable'; readonly detail: string }
  | { readonly outcome: 'rail_error'; readonly detail: string };

export type PaymentResult =
  | { readonly outcome: 'settled' | 'released' | 'refunded' | 'pending'; readonly rail_reference: string }
  | { readonly outcome: 'failed' | 'unavailable' | 'rail_error'; readonly detail: string };

export type SettlementState =
  | {
      readonly state: 'none' | 'authorized' | 'captured' | 'released' | 'refunded' | 'pending' | 'declined';
      readonly authorization_id?: string;
    }
  | { readonly state: 'unknown'; readonly detail: string };

export type AuthorizeBehaviour =
  | 'approve'
  | 'decline'
  | 'insufficient_funds'
  | 'unavailable'
  | 'rail_error'
  | 'rail_error_after_commit'
  | 'block_until_released';
export type ReleaseBehaviour = 'release' | 'pending' | 'fail' | 'rail_error';
export type CaptureBehaviour = 'settle' | 'fail' | 'rail_error';

export interface RailBehaviour {
  readonly authorize: AuthorizeBehaviour;
  readonly release: ReleaseBehaviour;
  readonly capture: CaptureBehaviour;
}

export interface SimulatedRailOptions {
  readonly mode: PaymentMode;
  readonly behaviour?: Partial<RailBehaviour>;
}

export interface RailCounters {
  authorize: number;
  capture: number;
  release: number;
  refund: number;
  settlementState: number;
}

interface Entry {
  state: Exclude<SettlementState, { state: 'unknown' }>['state'];
  authorization_id: string;
}

const DEFAULT_BEHAVIOUR: RailBehaviour = { authorize: 'approve', release: 'release', capture: 'settle' };

export class SimulatedPaymentRail {
  readonly counters: RailCounters = { authorize: 0, capture: 0, release: 0, refund: 0, settlementState: 0 };
  readonly mode: PaymentMode;
  private behaviour: RailBehaviour;
  private readonly perReference = new Map<string, Partial<RailBehaviour>>();
  private readonly entries = new Map<string, Entry>();
  private blocked: Array<() => void> = [];
  private unblocked = false;

  constructor(options: SimulatedRailOptions) {
    this.mode = options.mode;
    this.behaviour = { ...DEFAULT_BEHAVIOUR, ...options.behaviour };
  }

  /** Changes the behaviour for every reference without its own override. */
  configure(behaviour: Partial<RailBehaviour>): void {
    this.behaviour = { ...this.behaviour, ...behaviour };
  }

  configureReference(reference: string, behaviour: Partial<RailBehaviour>): void {
    this.perReference.set(reference, { ...this.perReference.get(reference), ...behaviour });
  }

  /** Lets every authorization blocked by block_until_released (and later ones) complete. */
  releaseBlockedAuthorizations(): void {
    this.unblocked = true;
    for (const wake of this.blocked) wake();
    this.blocked = [];
  }

  async authorize(request: {
    reference: string;
    hold_id: string;
    amount_units: bigint;
    currency: string;
  }): Promise<PaymentAuthorizeResult> {
    this.counters.authorize++;
    const behaviour = this.behaviourFor(request.reference).authorize;
    const authorization_id = `auth_${request.reference}`;
    switch (behaviour) {
      case 'decline':
        this.entries.set(request.reference, { state: 'declined', authorization_id });
        return { outcome: 'declined', detail: 'simulated decline' };
      case 'insufficient_funds':
        this.entries.set(request.reference, { state: 'declined', authorization_id });
        return { outcome: 'insufficient_funds' };
      case 'unavailable':
        return { outcome: 'unavailable', detail: 'simulated rail unavailable' };
      case 'rail_error':
        return { outcome: 'rail_error', detail: 'simulated lost acknowledgement' };
      case 'rail_error_after_commit':
        // The rail did authorize, but the answer never arrived: only a settlement query can tell.
        this.entries.set(request.reference, {
          state: this.mode === 'prepaid_final' ? 'captured' : 'authorized',
          authorization_id,
        });
        return { outcome: 'rail_error', detail: 'simulated lost acknowledgement' };
      case 'block_until_released':
        if (!this.unblocked) await new Promise<void>((resolve) => this.blocked.push(resolve));
        break;
      case 'approve':
        break;
    }
    this.entries.set(request.reference, {
      state: this.mode === 'prepaid_final' ? 'captured' : 'authorized',
      authorization_id,
    });
    return { outcome: 'authorized', authorization_id, mode: this.mode };
  }

  async capture(request: {
    authorization_id: string;
    amount_units: bigint;
    currency: string;
    reference: string;
  }): Promise<PaymentResult> {
    this.counters.capture++;
    const behaviour = this.behaviourFor(request.reference).capture;
    if (behaviour === 'fail') return { outcome: 'failed', detail: 'simulated capture failure' };
    if (behaviour === 'rail_error') return { outcome: 'rail_error', detail: 'simulated lost acknowledgement' };
    this.setState(request.reference, request.authorization_id, 'captured');
    return { outcome: 'settled', rail_reference: `capture_${request.reference}` };
  }

  async release(request: { authorization_id: string; reference: string }): Promise<PaymentResult> {
    this.counters.release++;
    return this.unwind(request.reference, request.authorization_id, 'released');
  }

  async refund(request: {
    transaction_id: string;
    amount_units: bigint;
    currency: string;
    reference: string;
  }): Promise<PaymentResult> {
    this.counters.refund++;
    return this.unwind(request.reference, request.transaction_id, 'refunded');
  }

  async settlementState(reference: string): Promise<SettlementState> {
    this.counters.settlementState++;
    const entry = this.entries.get(reference);
    return entry ? { state: entry.state, authorization_id: entry.authorization_id } : { state: 'none' };
  }

  private unwind(reference: string, authorizationId: string, done: 'released' | 'refunded'): PaymentResult {
    const behaviour = this.behaviourFor(reference).release;
    if (behaviour === 'fail') return { outcome: 'failed', detail: 'simulated release failure' };
    if (behaviour === 'rail_error') return { outcome: 'rail_error', detail: 'simulated lost acknowledgement' };
    if (behaviour === 'pending') {
      this.setState(reference, authorizationId, 'pending');
      return { outcome: 'pending', rail_reference: 'release_pending_reference' };
    }
    this.setState(reference, authorizationId, done);
    return { outcome: done, rail_reference: `${done}_${reference}` };
  }

  private setState(reference: string, authorizationId: string, state: Entry['state']): void {
    this.entries.set(reference, { state, authorization_id: authorizationId });
  }

  private behaviourFor(reference: string): RailBehaviour {
    return { ...this.behaviour, ...this.perReference.get(reference) };
  }
}
