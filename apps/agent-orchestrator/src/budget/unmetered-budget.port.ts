// Unmetered mode (docs/adr/0005): an explicit, loudly logged setting for benchmarks and
// local experiments. No authority is asked, but nothing is hidden from an audit: every
// attempt is still recorded with its price and worst-case cost, under a hold id that
// says it was never admitted, and the receipt says `metered: false`.
import type {
  AdmitDecision,
  AdmitRequest,
  BudgetPort,
  SettleRequest,
  SettleResult,
} from '@tally/orchestrator-application';
import { UNMETERED_HOLD_PREFIX } from '@tally/orchestrator-projections';

export class UnmeteredBudgetPort implements BudgetPort {
  /** Nobody is asked, so a unit whose token did not reach the worker can still run. */
  readonly credentialRequired = false;
  /** Settling tells nobody anything, so the worker need not wait for it between commits. */
  readonly settlesLocally = true;

  async admit(request: AdmitRequest): Promise<AdmitDecision> {
    return { verdict: 'allow', hold_id: `${UNMETERED_HOLD_PREFIX}${request.request_id}` };
  }

  async settle(request: SettleRequest): Promise<SettleResult> {
    return { receipt: { unmetered: true, hold_id: request.hold_id } };
  }
}
