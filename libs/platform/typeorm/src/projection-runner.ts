// Runs one projection: reads its stream from checkpoint + 1 with an ordered consumer and
// commits each batch's rows together with the new checkpoint in ONE transaction. Events
// at or below the checkpoint are ignored, so a redelivery or an overlapping read is a
// no-op, and a crash anywhere leaves either the whole batch or none of it.
// An event that cannot be projected stops only its own aggregate (ADR 0045): the runner
// finds it, records it in the quarantine table, steps the checkpoint over it and skips its
// aggregate's later events; a transient failure still halts the runner, to be restarted.
import { HistoryGap, type StoredEvent } from '@tally/eventing';
import { AggregateQuarantine } from './aggregate-quarantine.js';
import { assertAscending, countCommits, traced } from './batch-trace.js';
import { advanceCheckpoint, deleteCheckpoint, readCheckpoint } from './checkpoint-store.js';
import { CommitWatch } from './commit-watch.js';
import { qualifiedTable } from './data-source.js';
import { EventBatchReader, UndecodableEvent } from './event-batches.js';
import { isTransientFailure } from './projection-failures.js';
import type { Projection } from './projection.js';
import type { QuarantinedAggregate } from './quarantine.entity.js';
import {
  ProjectionHalted,
  type BatchOutcome,
  type CatchUpOptions,
  type CatchUpResult,
  type LoopPlan,
  type ProjectionRunnerOptions,
} from './runner-contract.js';
import { retryAggregate, undecodableFact, type RetryOutcome } from './quarantine-retry.js';
import { deleteQuarantine } from './quarantine-store.js';

export * from './runner-contract.js';

export class ProjectionRunner {
  private active: 'catch-up' | 'follow' | 'retry' | undefined;
  /** The highest checkpoint this runner has read or committed; 0 until it starts. */
  private readonly committed = new CommitWatch();
  private stopRequested: (() => void) | undefined;
  private following: Promise<void> | undefined;
  private readonly quarantine: AggregateQuarantine;

  constructor(private readonly options: ProjectionRunnerOptions) {
    if (!(options.batchSizeMax >= 1)) throw new Error('batchSizeMax must be at least 1');
    if (!(options.batchWaitMs >= 0)) throw new Error('batchWaitMs must not be negative');
    this.quarantine = new AggregateQuarantine({
      dataSource: options.dataSource,
      projection: options.projection,
      limits: options,
      onQuarantined: (row) => options.onQuarantined?.(row),
    });
  }

  get projection(): Projection {
    return this.options.projection;
  }

  /** The last committed stream sequence (0 before the first batch). */
  async checkpoint(): Promise<number> {
    const { projection } = this.options;
    return readCheckpoint(this.options.dataSource.manager, projection.name, projection.stream);
  }

  /**
   * Resolves true once this runner has committed (or started from) `sequence`, false after
   * `timeoutMs`. In-process, so a request waiting for its own write does not poll the
   * database; it only means something in the process that runs the projection.
   */
  waitCommitted(sequence: number, timeoutMs: number): Promise<boolean> {
    return this.committed.wait(sequence, timeoutMs);
  }

  private noteCommitted(checkpoint: number): void {
    if (this.committed.advance(checkpoint)) this.options.onCommitted?.(checkpoint);
  }

  /**
   * Applies one batch in one transaction: rows first, then the checkpoint, both or neither.
   * Events must be in ascending stream order; those at or below the checkpoint are ignored,
   * those of a quarantined aggregate are skipped (counted in its row). A failure is thrown:
   * finding the event at fault is the loop's job (applyOrIsolate).
   */
  async applyBatch(events: readonly StoredEvent[]): Promise<BatchOutcome> {
    const quarantined = await this.quarantine.subjects();
    const outcome = await traced(this.options.projection.name, events, () =>
      this.applyBatchInTransaction(events, quarantined),
    );
    this.noteCommitted(outcome.checkpoint);
    return outcome;
  }

  private applyBatchInTransaction(
    events: readonly StoredEvent[],
    quarantined: ReadonlyMap<string, unknown>,
  ): Promise<BatchOutcome> {
    assertAscending(events);
    const { projection, dataSource } = this.options;
    return dataSource.transaction(async (manager) => {
      const from = await readCheckpoint(manager, projection.name, projection.stream);
      const fresh = events.filter((e) => e.sequence > from);
      const ignored = events.length - fresh.length;
      if (fresh.length === 0) return { applied: 0, ignored, skipped: 0, checkpoint: from };
      const live = quarantined.size === 0 ? fresh : fresh.filter((e) => !quarantined.has(e.subject));
      if (live.length > 0) await projection.apply(manager, live);
      if (live.length < fresh.length)
        await this.quarantine.noteSkipped(
          manager,
          fresh.filter((e) => quarantined.has(e.subject)),
        );
      const to = fresh[fresh.length - 1]!.sequence;
      await advanceCheckpoint(manager, projection.name, projection.stream, from, to);
      return { applied: live.length, ignored, skipped: fresh.length - live.length, checkpoint: to };
    });
  }

  /** A batch that fails for a reason of its own is applied commit by commit to find the event at fault. */
  private async applyOrIsolate(batch: readonly StoredEvent[]): Promise<BatchOutcome> {
    try {
      return await this.applyBatch(batch);
    } catch (error) {
      if (isTransientFailure(error)) throw error;
      const outcome = await this.quarantine.isolate(batch, (commit) => this.applyBatch(commit));
      // The last commit may have been set aside, which applyBatch did not see.
      this.noteCommitted(outcome.checkpoint);
      return outcome;
    }
  }

  /** The aggregates this projection has quarantined, as the table says now. */
  async quarantined(): Promise<QuarantinedAggregate[]> {
    return [...(await this.quarantine.load()).values()];
  }

  /**
   * Applies the events set aside of every quarantined aggregate, in order, with the code
   * running now: what applies leaves quarantine (ADR 0045). `start()` does this first;
   * `tally projections retry` calls it with the projector lease held.
   */
  async retryQuarantined(): Promise<RetryOutcome[]> {
    this.claim('retry');
    try {
      return await this.retryAll();
    } finally {
      this.active = undefined;
    }
  }

  private async retryAll(): Promise<RetryOutcome[]> {
    const o = this.options;
    const outcomes: RetryOutcome[] = [];
    // One aggregate after the other: a retry is rare, and each holds its reader and transaction only briefly.
    for (const row of await this.quarantined()) {
      const outcome = await retryAggregate({ ...o, limits: o }, row);
      o.onRetried?.(outcome);
      outcomes.push(outcome);
    }
    await this.quarantine.load();
    return outcomes;
  }

  /** Reads until the last matching event that existed when it started (replay, CLI). */
  async catchUp(options: CatchUpOptions = {}): Promise<CatchUpResult> {
    this.claim('catch-up');
    try {
      return await this.runCatchUp(options);
    } finally {
      this.active = undefined;
    }
  }

  /** Empties the projection's tables and checkpoint in one transaction, then replays from sequence 1. */
  async rebuild(options: CatchUpOptions = {}): Promise<CatchUpResult> {
    this.claim('catch-up');
    try {
      const { projection, dataSource } = this.options;
      await dataSource.transaction(async (manager) => {
        for (const table of projection.tables) await manager.query(`DELETE FROM ${qualifiedTable(dataSource, table)}`);
        await deleteCheckpoint(manager, projection.name);
        await deleteQuarantine(manager, projection.name);
      });
      this.committed.reset();
      this.quarantine.reset();
      return await this.runCatchUp(options);
    } finally {
      this.active = undefined;
    }
  }

  /**
   * Retries the quarantined aggregates, then follows the stream live until stop(). The
   * promise settles when following ends: it resolves after stop() and rejects with
   * ProjectionHalted on a transient failure (the caller restarts it, with a backoff).
   */
  start(): Promise<void> {
    this.claim('follow');
    const stop = new Promise<void>((resolve) => (this.stopRequested = resolve));
    this.following = this.follow(stop).finally(() => {
      this.active = undefined;
      this.stopRequested = undefined;
    });
    return this.following;
  }

  /** Asks the live loop to finish its batch and end; waits for it. Never throws. */
  async stop(): Promise<void> {
    this.stopRequested?.();
    await this.following?.catch(() => undefined);
  }

  private async follow(stop: Promise<void>): Promise<void> {
    const o = this.options;
    let stopped = false;
    void stop.then(() => (stopped = true));
    await this.guard(await this.checkpoint(), () => this.retryAll());
    await this.pipeline((_reader, halted) => ({
      limit: () => o.batchSizeMax,
      commitsMax: () => undefined,
      firstWaitMs: undefined,
      stop: Promise.race([stop, halted]),
      stopAtEnd: false,
      more: () => !stopped,
      onBatch: () => undefined,
      onEmpty: () => (stopped ? 'end' : 'again'),
    }));
  }

  /** Progress counts commits (stream messages), which is what the stream reports as pending. */
  private async runCatchUp(options: CatchUpOptions): Promise<CatchUpResult> {
    const o = this.options;
    let total = 0;
    let done = 0;
    let events = 0;
    let batches = 0;
    const checkpoint = await this.pipeline((reader, halted) => {
      total = reader.pendingAtStart;
      return {
        limit: () => o.batchSizeMax,
        commitsMax: () => total - done,
        firstWaitMs: o.catchUpStallMs,
        stop: halted,
        stopAtEnd: true,
        more: () => done < total && !(done > 0 && reader.reachedEnd),
        onBatch: (batch: readonly StoredEvent[]) => {
          done += countCommits(batch);
          events += batch.length;
          batches++;
        },
        onCommitted: () => options.onProgress?.(done, total),
        // A message that does not decode is done with once its aggregate is quarantined.
        onSetAside: () => {
          done++;
          options.onProgress?.(done, total);
        },
        onEmpty: () => {
          throw new Error(`replay stalled: no event for ${o.catchUpStallMs} ms at ${done}/${total}`);
        },
      };
    });
    return { events, batches, checkpoint };
  }

  /**
   * The read/commit loop shared by both modes. While one batch commits, the next one is
   * already being read and decoded, so the database and the stream work at the same time
   * (on PostgreSQL; SQLite's driver is synchronous and gains nothing, loses nothing).
   */
  private async pipeline(makePlan: (reader: EventBatchReader, halted: Promise<void>) => LoopPlan): Promise<number> {
    const o = this.options;
    let checkpoint = await this.checkpoint();
    this.noteCommitted(checkpoint);
    await this.quarantine.load();
    await this.guard(checkpoint, () => this.assertStreamHolds(checkpoint + 1));
    const reader = await this.openReader(checkpoint + 1);
    let halt!: () => void;
    // Settles when the loop ends, so a read started ahead of a failed batch returns promptly.
    const halted = new Promise<void>((resolve) => (halt = resolve));
    const p = makePlan(reader, halted);
    const read = () => {
      const commitsMax = p.commitsMax();
      const batch = reader.read({
        limit: p.limit(),
        ...(commitsMax === undefined ? {} : { commitsMax }),
        batchWaitMs: o.batchWaitMs,
        firstWaitMs: p.firstWaitMs,
        stop: p.stop,
        stopAtEnd: p.stopAtEnd,
      });
      // Awaited in the loop, or in the finally below when the loop fails first; never unhandled.
      batch.catch(() => undefined);
      return batch;
    };
    let next: Promise<StoredEvent[]> | undefined = p.more() ? read() : undefined;
    try {
      while (next) {
        const pending = next;
        next = undefined;
        const batch = await this.guard(checkpoint, () => pending.catch((e: unknown) => this.undecodable(e, reader)));
        if (typeof batch === 'number') {
          checkpoint = batch;
          p.onSetAside?.();
          if (p.more()) next = read();
          continue;
        }
        if (batch.length === 0) {
          if (this.guardSync(checkpoint, p.onEmpty) === 'end') break;
          next = read();
          continue;
        }
        p.onBatch(batch);
        if (p.more()) next = read();
        checkpoint = (await this.guard(checkpoint, () => this.applyOrIsolate(batch))).checkpoint;
        p.onCommitted?.();
      }
    } finally {
      halt();
      await next?.catch(() => undefined);
      await reader.close();
    }
    return checkpoint;
  }

  /**
   * A message that does not decode is set aside like an event that does not apply, and the
   * reader steps over it; any other read failure halts. Resolves to the new checkpoint.
   */
  private async undecodable(error: unknown, reader: EventBatchReader): Promise<number> {
    if (!(error instanceof UndecodableEvent) || error.subject === '') throw error;
    const { sequence, eventType, reason } = undecodableFact(error);
    const fact = this.quarantine.factOf(error.subject, sequence, eventType, reason);
    const checkpoint = await this.quarantine.setAside(fact);
    reader.stepOverUndecodable();
    this.noteCommitted(checkpoint);
    return checkpoint;
  }

  /**
   * The stream must still hold every message from `sequence` on: one whose first sequence is
   * past it has lost events this projection never saw (deleted, purged, or dropped by a limit),
   * and folding what is left would build read models that the ledger does not support.
   */
  private async assertStreamHolds(sequence: number): Promise<void> {
    const { stream, filterSubject } = this.options.projection;
    const jsm = await this.options.js.jetstreamManager(false);
    const { state } = await jsm.streams.info(stream);
    if (state.first_seq > sequence)
      throw new HistoryGap(
        stream,
        filterSubject,
        `the stream starts at sequence ${state.first_seq} but this projection needs every event from ${sequence} on`,
      );
  }

  private openReader(startSequence: number): Promise<EventBatchReader> {
    const o = this.options;
    return EventBatchReader.open(o.js, {
      stream: o.projection.stream,
      filterSubject: o.projection.filterSubject,
      startSequence,
      registry: o.registry,
      prefetchMessagesMax: o.prefetchMessagesMax,
      idleHeartbeatMs: o.idleHeartbeatMs,
      pullExpiresMs: o.pullExpiresMs,
    });
  }

  /** Any failure inside a batch is a bug or an outage the runner must not paper over: halt and say where. */
  private async guard<T>(checkpoint: number, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof ProjectionHalted) throw error;
      throw new ProjectionHalted(this.options.projection.name, checkpoint, error);
    }
  }

  private guardSync<T>(checkpoint: number, step: () => T): T {
    try {
      return step();
    } catch (error) {
      throw new ProjectionHalted(this.options.projection.name, checkpoint, error);
    }
  }

  private claim(mode: 'catch-up' | 'follow' | 'retry'): void {
    if (this.active) throw new Error(`projection ${this.options.projection.name} is already running (${this.active})`);
    this.active = mode;
  }
}
