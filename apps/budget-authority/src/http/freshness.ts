// Read-your-writes for the projection-backed reads: before answering, wait (bounded)
// until the ledger projection has applied the tree's last event. Any replica can ask;
// the projection itself runs on whichever replica holds the projection lease. And a tree
// the projection has quarantined (ADR 0045) is refused with 503 instead of read stale.
import { BUDGET_LEDGER_PROJECTION } from '@tally/budget-projections';
import { quarantinedProblem, type HostContext } from '@tally/platform-app';

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

  /**
   * Refuses a read of a quarantined tree with 503: when the caller may see what it asked for,
   * or when nobody can (its rows may be missing because of the quarantine). A caller who may
   * not see an existing resource still gets its 404, so the 503 tells another tenant nothing.
   */
  async refuseQuarantined(rootId: string, visible: boolean, existsForAnyone: () => Promise<boolean>): Promise<void> {
    const entry = this.ctx.quarantine.find(BUDGET_LEDGER_PROJECTION, rootId);
    if (entry && (visible || !(await existsForAnyone()))) throw quarantinedProblem(entry, 'budget tree');
  }

  /** Whether any budget tree is quarantined: the cheap test before a read across trees looks closer. */
  anyQuarantined(): boolean {
    return this.ctx.quarantine.all().some((e) => e.projection === BUDGET_LEDGER_PROJECTION);
  }

  /** The 503 for a read across trees that holds a quarantined tree's rows. */
  refuseTree(rootId: string): void {
    const entry = this.ctx.quarantine.find(BUDGET_LEDGER_PROJECTION, rootId);
    if (entry) throw quarantinedProblem(entry, 'budget tree');
  }
}
