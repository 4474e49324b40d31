// The receipt as the public API serves it: the domain's receipt with money on the wire
// (a JSON number up to 2^53-1, else a decimal string), plus each attempt's hold id and
// whether the budget authority metered the unit, so an auditor can join the two ledgers.
import { moneyToWire } from '@tally/contracts';
import type { WorkReceipt, WorkUnitState } from '@tally/orchestrator-domain';

/** Hold ids of attempts dispatched in unmetered mode carry this prefix (docs/adr/0005). */
export const UNMETERED_HOLD_PREFIX = 'unmetered:';

export type WireReceipt = Record<string, unknown> & {
  readonly work_id: string;
  readonly attempts: readonly Record<string, unknown>[];
};

export function wireReceipt(receipt: WorkReceipt, state: WorkUnitState): WireReceipt {
  const attempts = receipt.attempts.map((a, i) => {
    const { usage, ...rest } = a;
    const wireUsage = usage
      ? {
          input_tokens: usage.input_tokens,
          output_tokens: usage.output_tokens,
          ...(usage.cost_units === undefined ? {} : { cost_units: moneyToWire(usage.cost_units) }),
        }
      : undefined;
    const holdId = state.attempts[i]?.hold_id;
    return {
      ...rest,
      ...(wireUsage ? { usage: wireUsage } : {}),
      ...(holdId === undefined ? {} : { hold_id: holdId }),
    };
  });
  const metered = !state.attempts.some((a) => a.hold_id.startsWith(UNMETERED_HOLD_PREFIX));
  return { ...receipt, attempts, metered };
}
