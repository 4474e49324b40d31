// The invariants of a run, checked as it goes: every budget commit is folded by the
// independent shadow (limits, holds), by the reference replay (the domain's invariants) and
// by the receipt-chain check; after every step each live authority replica's in-memory trees
// are held up against the replay at their sequence. Violations are collected with the step
// they were found at; the run fails on the first.
import { fromStored } from '@tally/budget-application';
import type { Signer } from '@tally/budget-application';
import type { BudgetAuthority } from '@tally/budget-application';
import type { TallyNames } from '@tally/contracts';
import type { SimMessage, SimStream } from '../store/sim-stream.js';
import { LedgerShadow } from './ledger-shadow.js';
import { ReceiptChains } from './receipt-chains.js';
import { ReferenceFold } from './reference-fold.js';

/** A work unit as the work stream shows it: submitted, and whether it ended. */
export interface UnitRecord {
  ended: boolean;
}

export class Checker {
  readonly violations: string[] = [];
  readonly shadow: LedgerShadow;
  readonly fold: ReferenceFold;
  readonly chains: ReceiptChains;
  readonly units = new Map<string, UnitRecord>();
  private readonly openAmbiguities = new Map<string, number>();
  private readonly seen = new Map<string, unknown>();
  budgetCommits = 0;
  /** Virtual time of the last commit on either stream: the quiet tail stops once nothing moves for long. */
  lastCommitMs = 0;

  constructor(
    private readonly names: TallyNames,
    private readonly budget: SimStream,
    work: SimStream,
    signer: Signer,
    private readonly now: () => string,
    private readonly nowMs: () => number,
  ) {
    const violation = (detail: string) => this.fail(detail);
    this.shadow = new LedgerShadow(violation);
    this.fold = new ReferenceFold(violation);
    this.chains = new ReceiptChains(signer, violation);
    budget.onCommit((message) => this.onBudgetCommit(message));
    work.onCommit((message) => this.onWorkCommit(message));
  }

  fail(detail: string): void {
    this.violations.push(`${this.now()}: ${detail}`);
  }

  /** Trees with an uncaptured hold past its TTL at `nowMs`: the expiry sweep's query. */
  expiredTrees(nowMs: number): string[] {
    const roots = new Set<string>();
    for (const hold of this.shadow.authorized) if (hold.expires_at_ms <= nowMs) roots.add(hold.root_id);
    return [...roots];
  }

  /**
   * Trees the sweep of stranded holds visits (ADR 0059), as the projection names them: a
   * hold captured and never admitted past its TTL, or one reversed or cancelled whose TTL
   * passed within `windowMs` (its lease may have been left reserved).
   */
  strandedTrees(nowMs: number, windowMs: number): string[] {
    const roots = new Set<string>();
    for (const hold of this.shadow.holds.values()) {
      if (hold.expires_at_ms > nowMs) continue;
      const closed =
        (hold.status === 'reversed' || hold.status === 'cancelled') && hold.expires_at_ms > nowMs - windowMs;
      if ((hold.status === 'captured' && !hold.admitted) || closed) roots.add(hold.root_id);
    }
    return [...roots];
  }

  /** Trees with an unresolved ambiguity: the reconciler's query. */
  ambiguousTrees(): string[] {
    return [...this.openAmbiguities.entries()].filter(([, n]) => n > 0).map(([root]) => root);
  }

  ambiguitiesOpen(): number {
    let open = 0;
    for (const n of this.openAmbiguities.values()) open += n;
    return open;
  }

  /** After a step: every tree a live replica holds in memory equals the replay at its sequence. */
  compareReplicas(replicas: readonly { name: string; authority: BudgetAuthority | undefined }[]): void {
    for (const replica of replicas) {
      const authority = replica.authority;
      if (!authority) continue;
      for (const root of this.fold.roots()) {
        const view = authority.cachedTree(root);
        const key = `${replica.name}|${root}`;
        const before = this.seen.get(key) as { lastSequence: number } | undefined;
        if (view === undefined || view === before) continue;
        this.seen.set(key, view);
        const from = before && before.lastSequence <= view.lastSequence ? before.lastSequence : 0;
        const differs = this.fold.compareQuick(root, view, this.touchedHolds(root, from, view.lastSequence));
        if (differs) this.fail(`${replica.name} holds tree ${root} unlike its replay: ${differs}`);
      }
    }
  }

  /** At the end: every tree each live replica holds equals the replay, entry by entry. */
  compareReplicasFully(replicas: readonly { name: string; authority: BudgetAuthority | undefined }[]): void {
    for (const replica of replicas)
      for (const root of this.fold.roots()) {
        const view = replica.authority?.cachedTree(root);
        const differs = view && this.fold.compareFull(root, view);
        if (differs) this.fail(`${replica.name}: ${differs}`);
      }
  }

  private touchedHolds(root: string, after: number, upTo: number): string[] {
    const holds = new Set<string>();
    for (const message of this.budget.subjectMessages(this.names.budgetEventSubject(root), after, upTo))
      for (const { event } of message.events) {
        const holdId = (event.payload as { hold_id?: unknown }).hold_id;
        if (typeof holdId === 'string') holds.add(holdId);
      }
    return [...holds];
  }

  private onBudgetCommit(message: SimMessage): void {
    this.budgetCommits++;
    this.lastCommitMs = this.nowMs();
    const root = message.events[0]!.event.aggregateId;
    const events = message.events.map(fromStored);
    for (const recorded of events) {
      this.shadow.apply(root, recorded);
      if (recorded.type === 'AmbiguityRecorded')
        this.openAmbiguities.set(root, (this.openAmbiguities.get(root) ?? 0) + 1);
      if (recorded.type === 'AmbiguityResolved')
        this.openAmbiguities.set(root, (this.openAmbiguities.get(root) ?? 0) - 1);
    }
    this.fold.apply(root, message, events);
    this.chains.apply(message);
  }

  private onWorkCommit(message: SimMessage): void {
    this.lastCommitMs = this.nowMs();
    for (const { event } of message.events) {
      const unit = this.units.get(event.aggregateId);
      if (event.type === 'WorkSubmitted' && !unit) this.units.set(event.aggregateId, { ended: false });
      if (unit && ['WorkCompleted', 'WorkFailed', 'WorkAborted'].includes(event.type)) {
        if (unit.ended) this.fail(`work unit ${event.aggregateId} ended twice`);
        unit.ended = true;
      }
    }
  }
}
