// Which faults may strike, how often, and whether the run is still in its fault phase.
// Every check draws from the faults stream whether or not its kind is enabled, so turning
// a kind off (while shrinking a failure) leaves the other draws where they were.
import type { Prng } from '../core/prng.js';

export const FAULT_KINDS = [
  /** An append never reaches the server; its caller waits out the publish timeout (AppendOutcomeUnknown). */
  'lost_ack_before',
  /** An append is stored, but its acknowledgement is lost (AppendOutcomeUnknown). */
  'lost_ack_after',
  /** A load times out. */
  'load_failure',
  /** A load is answered by a replica that lags a commit or two behind. */
  'stale_read',
  /** The budget stream refuses every append for a while, as at its byte limit. */
  'stream_full',
  /** A core request, or its reply, is lost; the caller times out. */
  'request_loss',
  /** A core request reaches the authority twice. */
  'request_duplicate',
  /** A replica dies mid-step and restarts from the stream. */
  'kill',
  /** Virtual time jumps ahead, to just before or after a period boundary or a hold's expiry. */
  'clock_jump',
  /** The rail declines, or answers without confirming (before or after it acted), or leaves a release pending. */
  'rail',
  /** The provider fails, times out, rate limits, or bills past its max_tokens. */
  'provider',
  /** The admission hook denies, or cannot confirm a lease release. */
  'hook',
  /** A work-queue message is delivered again while its first delivery still runs. */
  'queue_duplicate',
  /** A caller aborts its work unit. */
  'abort',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * The faults a run uses unless told otherwise: all but stale reads. A lagging replica
 * answering a direct get exists only on a replicated stream (ADR 0018); the findings it
 * leads to are reported in ADR 0057, and `--with stale_read` turns it on.
 */
export const DEFAULT_FAULTS: readonly FaultKind[] = FAULT_KINDS.filter((kind) => kind !== 'stale_read');

export type FaultRates = Readonly<Record<FaultKind, number>>;

/**
 * How often each fault strikes: per call for the ports' faults (an append, a load, a request,
 * a rail or provider call), per tick of the fault injector (about a virtual second) for
 * kill, clock_jump, stream_full and abort.
 */
export const DEFAULT_FAULT_RATES: FaultRates = {
  lost_ack_before: 0.01,
  lost_ack_after: 0.02,
  load_failure: 0.01,
  stale_read: 0.02,
  stream_full: 0.03,
  request_loss: 0.03,
  request_duplicate: 0.02,
  kill: 0.08,
  clock_jump: 0.08,
  rail: 0.15,
  provider: 0.2,
  hook: 0.1,
  queue_duplicate: 0.03,
  abort: 0.1,
};

export class Faults {
  /** Set for the quiet tail: no fault strikes, so every ambiguity must resolve. */
  quiet = false;

  constructor(
    readonly enabled: ReadonlySet<FaultKind>,
    private readonly rates: FaultRates,
    private readonly rng: Prng,
  ) {}

  strikes(kind: FaultKind, scale = 1): boolean {
    const hit = this.rng.float() < this.rates[kind] * scale;
    return hit && !this.quiet && this.enabled.has(kind);
  }

  /** A second draw for the shape of a fault that struck (which variant, how long). */
  get draw(): Prng {
    return this.rng;
  }
}
