// Read-your-writes for the projection-backed reads: before answering, wait (bounded)
// until the ledger projection has applied the tree's last event. Any replica can ask;
// the projection itself runs on whichever replica holds the projection lease.
import { BUDGET_LEDGER_PROJECTION } from '@tally/budget-projections';
import type { HostContext } from '@tally/platform-app';

export interface FreshnessLimits {
  /** How long a read waits for the projection before it answers with what it has. */
  readonly readWaitMs: number;
}

export class Freshness {
  constructor(
    private readonly ctx: HostContext,
    private readonly limits: FreshnessLimits,
  ) {}

  /** True when the projection has caught up with the tree's stream subject. */
  async awaitTree(rootId: string): Promise<boolean> {
    const names = this.ctx.nats.names;
    let sequence = 0;
    try {
      const last = await this.ctx.nats.jsm.streams.getMessage(names.budgetEventsStream, {
        last_by_subj: names.budgetEventSubject(rootId),
      });
      sequence = last?.seq ?? 0;
    } catch {
      // No message on the subject yet (or an id that is no subject token): nothing to wait for.
      return true;
    }
    if (sequence === 0) return true;
    return this.ctx.projections.waitFor(BUDGET_LEDGER_PROJECTION, sequence, this.limits.readWaitMs);
  }
}
