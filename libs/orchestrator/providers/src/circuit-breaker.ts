// A per-provider circuit breaker for O5. It trips only on failures that say the provider
// cannot be reached or cannot be understood (domain 'network', and 'model' for unparseable
// responses). A 429 or 503 is the provider answering clearly, so it never trips the breaker:
// those are handled by backoff and Retry-After instead.
import type { DispatchOutcome, FailureDomain } from './provider-gateway.types.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface CircuitBreakerOptions {
  /** Consecutive tripping failures (network or parse) that open the breaker. */
  failureThreshold: number;
  /** How long the breaker stays open before it lets probe calls through. */
  coolDownMs: number;
  /** Concurrent probe calls allowed while half-open. */
  halfOpenProbesMax: number;
  /** Clock in milliseconds; injectable so tests need not sleep. */
  nowMs?: () => number;
}

export type BreakerPermit = { allowed: true } | { allowed: false; retryInMs: number };

const TRIPPING_DOMAINS: ReadonlySet<FailureDomain> = new Set(['network', 'model']);
/** Outcomes that prove the provider answered with a well-formed HTTP response. */
const HEALTHY_DOMAINS: ReadonlySet<FailureDomain> = new Set(['account', 'provider', 'request']);

export class CircuitBreaker {
  private stateValue: BreakerState = 'closed';
  private consecutiveFailures = 0;
  private openedAtMs = 0;
  private probesInFlight = 0;
  private readonly nowMs: () => number;

  constructor(private readonly options: CircuitBreakerOptions) {
    if (!Number.isInteger(options.failureThreshold) || options.failureThreshold < 1)
      throw new Error('CircuitBreaker: failureThreshold must be an integer ≥ 1');
    if (!(options.coolDownMs >= 0)) throw new Error('CircuitBreaker: coolDownMs must be ≥ 0');
    if (!Number.isInteger(options.halfOpenProbesMax) || options.halfOpenProbesMax < 1)
      throw new Error('CircuitBreaker: halfOpenProbesMax must be an integer ≥ 1');
    this.nowMs = options.nowMs ?? (() => Date.now());
  }

  get state(): BreakerState {
    if (this.stateValue === 'open' && this.nowMs() >= this.openedAtMs + this.options.coolDownMs) return 'half-open';
    return this.stateValue;
  }

  /** Asks to make a call. Every allowed call must be followed by exactly one record(). */
  acquire(): BreakerPermit {
    if (this.stateValue === 'open') {
      const retryInMs = this.openedAtMs + this.options.coolDownMs - this.nowMs();
      if (retryInMs > 0) return { allowed: false, retryInMs };
      this.stateValue = 'half-open';
      this.probesInFlight = 0;
    }
    if (this.stateValue === 'half-open') {
      if (this.probesInFlight >= this.options.halfOpenProbesMax)
        return { allowed: false, retryInMs: this.options.coolDownMs };
      this.probesInFlight++;
    }
    return { allowed: true };
  }

  /** Records the outcome of a call that acquire() allowed. */
  record(outcome: DispatchOutcome): void {
    const probing = this.stateValue === 'half-open';
    if (probing) this.probesInFlight = Math.max(0, this.probesInFlight - 1);
    if (outcome.kind === 'ok' || HEALTHY_DOMAINS.has(outcome.domain)) {
      this.close();
    } else if (TRIPPING_DOMAINS.has(outcome.domain)) {
      this.consecutiveFailures++;
      if (probing || this.consecutiveFailures >= this.options.failureThreshold) this.open();
    }
    // Deadlines and cancellations say nothing about reachability; they leave the count alone.
  }

  private open(): void {
    this.stateValue = 'open';
    this.openedAtMs = this.nowMs();
    this.probesInFlight = 0;
  }

  private close(): void {
    this.stateValue = 'closed';
    this.consecutiveFailures = 0;
    this.probesInFlight = 0;
  }
}
