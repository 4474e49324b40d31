// The work receipt: one per unit, derived from its events alone, so the live view, a
// restart and a full replay all produce the same receipt.
//
// Ordinals are 0-based, exactly as in the reference suite: its first example's second
// attempt wins with `winning_attempt = 1`, i.e. `attempts[i].ordinal === i`.
import type { AttemptState, WorkUnitState } from './work-unit.state.js';
import type { AttemptReason, FailureDomain, Purpose, Settlement } from './work-unit.types.js';

export interface ReceiptUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  /** Realized cost in minor units once the hold settled on usage. */
  readonly cost_units?: bigint;
}

export interface ReceiptAttempt {
  readonly ordinal: number;
  readonly reason: AttemptReason;
  readonly domain: FailureDomain;
  readonly settlement: Settlement;
  readonly latency_ms: number;
  readonly usage?: ReceiptUsage;
  readonly error?: string;
  readonly provider: string;
  readonly model: string;
}

export interface WorkReceipt {
  readonly work_id: string;
  readonly purpose: Purpose;
  /** The winning attempt's leg, else the last attempted leg, else the first leg of the route. */
  readonly provider: string;
  readonly model: string;
  readonly attempts: readonly ReceiptAttempt[];
  /** The ordinal of the attempt whose reply completed the work, or null. */
  readonly winning_attempt: number | null;
}

export function receiptOf(state: WorkUnitState): WorkReceipt | undefined {
  const work = state.work;
  if (!work) return undefined;
  const winning = state.completion?.winning_attempt ?? null;
  const leg = (winning === null ? undefined : state.attempts[winning]) ?? state.attempts.at(-1) ?? work.route[0];
  return {
    work_id: work.work_id,
    purpose: work.purpose,
    provider: leg?.provider ?? '',
    model: leg?.model ?? '',
    attempts: state.attempts.map(receiptAttempt),
    winning_attempt: winning,
  };
}

function receiptAttempt(attempt: AttemptState): ReceiptAttempt {
  // An attempt still in flight has no outcome yet, and absent is unknown.
  const settled = attempt.settled;
  const usage = settled?.usage
    ? {
        input_tokens: settled.usage.input_tokens,
        output_tokens: settled.usage.output_tokens,
        ...(attempt.hold?.cost_units === undefined ? {} : { cost_units: attempt.hold.cost_units }),
      }
    : undefined;
  return {
    ordinal: attempt.ordinal,
    reason: attempt.reason,
    domain: settled?.domain ?? 'unknown',
    settlement: settled?.settlement ?? 'unknown',
    latency_ms: settled?.latency_ms ?? 0,
    ...(usage ? { usage } : {}),
    ...(settled?.error === undefined ? {} : { error: settled.error }),
    provider: attempt.provider,
    model: attempt.model,
  };
}
