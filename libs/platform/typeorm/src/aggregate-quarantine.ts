// The runner's side of ADR 0045: which aggregates of one projection are set aside, how a
// failed batch is split to find the commit that fails on its own, and how that commit's
// aggregate is recorded and stepped over. Only the runner holding the projector lease
// writes the set, so it is kept in memory and loaded from the table when a run starts.
import type { StoredEvent } from '@tally/eventing';
import type { DataSource, EntityManager } from 'typeorm';
import { commitsOf } from './batch-trace.js';
import { advanceCheckpoint, readCheckpoint } from './checkpoint-store.js';
import { isTransientFailure, unprojectableReason } from './projection-failures.js';
import type { Projection } from './projection.js';
import type { QuarantinedAggregate } from './quarantine.entity.js';
import { insertQuarantine, listQuarantine, noteSkipped, type QuarantineFact } from './quarantine-store.js';

export interface QuarantineLimits {
  /** Tries of one commit applied alone, after its batch failed, before its aggregate is quarantined. */
  readonly isolatedAttemptsMax: number;
  /** Wait before the second try of a commit applied alone; it doubles for each further try. */
  readonly isolatedRetryDelayMs: number;
}

/** The limits the services and the CLI run with: a deterministic failure repeats three times within a second. */
export const QUARANTINE_LIMITS: QuarantineLimits = { isolatedAttemptsMax: 3, isolatedRetryDelayMs: 200 };

export interface SetAsideOutcome {
  readonly applied: number;
  readonly ignored: number;
  /** Events not applied because their aggregate is quarantined (the failing one included). */
  readonly skipped: number;
  readonly checkpoint: number;
}

interface QuarantineContext {
  readonly dataSource: DataSource;
  readonly projection: Projection;
  readonly limits: QuarantineLimits;
  /** Told each aggregate quarantined, once its row has committed. */
  readonly onQuarantined: (row: QuarantinedAggregate) => void;
}

/** A subject's last token is the aggregate's id: `ns.budget.evt.<root>` under `ns.budget.evt.>`. */
export function aggregateIdOf(subject: string, filterSubject: string): string {
  const prefix = filterSubject.endsWith('.>') ? filterSubject.slice(0, -1) : undefined;
  return prefix !== undefined && subject.startsWith(prefix) ? subject.slice(prefix.length) : subject;
}

export class AggregateQuarantine {
  private rows: Map<string, QuarantinedAggregate> | undefined;

  constructor(private readonly ctx: QuarantineContext) {
    if (!(ctx.limits.isolatedAttemptsMax >= 1)) throw new Error('isolatedAttemptsMax must be at least 1');
    if (!(ctx.limits.isolatedRetryDelayMs >= 0)) throw new Error('isolatedRetryDelayMs must not be negative');
  }

  /** Reads the set from the table: at the start of every run, so a retry made elsewhere is seen. */
  async load(): Promise<ReadonlyMap<string, QuarantinedAggregate>> {
    const rows = await listQuarantine(this.ctx.dataSource.manager, this.ctx.projection.name);
    this.rows = new Map(rows.map((row) => [row.subject, row]));
    return this.rows;
  }

  async subjects(): Promise<ReadonlyMap<string, QuarantinedAggregate>> {
    return this.rows ?? (await this.load());
  }

  /** Forgets the set, as when a rebuild empties the table. */
  reset(): void {
    this.rows = new Map();
  }

  forget(subject: string): void {
    this.rows?.delete(subject);
  }

  /** Inside a batch transaction: counts the events of quarantined aggregates the batch steps over. */
  async noteSkipped(manager: EntityManager, skipped: readonly StoredEvent[]): Promise<void> {
    const bySubject = new Map<string, { count: number; last: number }>();
    for (const event of skipped) {
      const seen = bySubject.get(event.subject) ?? { count: 0, last: 0 };
      bySubject.set(event.subject, { count: seen.count + 1, last: Math.max(seen.last, event.sequence) });
    }
    for (const [subject, { count, last }] of bySubject)
      await noteSkipped(manager, this.ctx.projection.name, subject, count, last);
  }

  /**
   * A batch failed for a reason that is not transient: applies it commit by commit, each in
   * its own transaction, and quarantines the aggregate of a commit that keeps failing alone.
   * A transient failure on the way ends the isolation as it would end a batch.
   */
  async isolate(batch: readonly StoredEvent[], apply: (events: StoredEvent[]) => Promise<SetAsideOutcome>) {
    const total = { applied: 0, ignored: 0, skipped: 0, checkpoint: 0 };
    for (const commit of commitsOf(batch)) {
      const outcome = await this.applyAlone(commit, apply);
      total.applied += outcome.applied;
      total.ignored += outcome.ignored;
      total.skipped += outcome.skipped;
      total.checkpoint = Math.max(total.checkpoint, outcome.checkpoint);
    }
    return total;
  }

  /** The error must repeat on the commit applied alone, `isolatedAttemptsMax` times, to count as the commit's. */
  async applyAlone(
    commit: StoredEvent[],
    apply: (events: StoredEvent[]) => Promise<SetAsideOutcome>,
  ): Promise<SetAsideOutcome> {
    const tried = await tryAlone(commit, apply, this.ctx.limits);
    if (tried.ok) return tried.value;
    const first = commit[0]!;
    const fact = this.factOf(first.subject, first.sequence, typesOf(commit), unprojectableReason(tried.failure));
    return { applied: 0, ignored: 0, skipped: commit.length, checkpoint: await this.setAside(fact) };
  }

  factOf(subject: string, sequence: number, eventType: string, reason: string): QuarantineFact {
    return {
      subject,
      aggregateId: aggregateIdOf(subject, this.ctx.projection.filterSubject),
      sequence,
      eventType,
      reason,
    };
  }

  /**
   * Records the event's aggregate (or, when it is already quarantined, one more skipped event)
   * and moves the checkpoint onto the event, in one transaction. Returns the checkpoint.
   */
  async setAside(fact: QuarantineFact): Promise<number> {
    const { dataSource, projection } = this.ctx;
    const known = (await this.subjects()).get(fact.subject);
    const outcome = await dataSource.transaction(async (manager) => {
      const from = await readCheckpoint(manager, projection.name, projection.stream);
      if (fact.sequence <= from) return { checkpoint: from, row: undefined };
      const row = known
        ? (await noteSkipped(manager, projection.name, fact.subject, 1, fact.sequence), undefined)
        : await insertQuarantine(manager, projection.name, fact, Date.now());
      await advanceCheckpoint(manager, projection.name, projection.stream, from, fact.sequence);
      return { checkpoint: fact.sequence, row };
    });
    if (outcome.row) {
      this.rows?.set(outcome.row.subject, outcome.row);
      this.ctx.onQuarantined(outcome.row);
    }
    return outcome.checkpoint;
  }
}

/** The event types of a commit, as its quarantine row names them. */
export function typesOf(commit: readonly StoredEvent[]): string {
  return [...new Set(commit.map((e) => e.event.type))].join('+');
}

/**
 * Applies a commit alone up to `isolatedAttemptsMax` times. A transient failure is thrown at
 * once (it is no verdict on the commit); a failure that repeats on every try is returned.
 */
export async function tryAlone<T>(
  commit: StoredEvent[],
  apply: (events: StoredEvent[]) => Promise<T>,
  limits: QuarantineLimits,
): Promise<{ readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: unknown }> {
  let failure: unknown;
  for (let attempt = 1; attempt <= limits.isolatedAttemptsMax; attempt++) {
    try {
      return { ok: true, value: await apply(commit) };
    } catch (error) {
      if (isTransientFailure(error)) throw error;
      failure = error;
      if (attempt < limits.isolatedAttemptsMax) await sleep(limits.isolatedRetryDelayMs * 2 ** (attempt - 1));
    }
  }
  return { ok: false, failure };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
