// The projection runner's options, results and failure, and the plan that makes its one
// read/commit loop behave as live following or as a catch-up.
import type { JetStreamClient } from '@nats-io/jetstream';
import type { EventRegistry } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import type { DataSource } from 'typeorm';
import type { QuarantineLimits } from './aggregate-quarantine.js';
import type { EventReadLimits } from './event-batches.js';
import type { Projection } from './projection.js';
import type { QuarantinedAggregate } from './quarantine.entity.js';
import type { RetryOutcome } from './quarantine-retry.js';

export interface ProjectionRunnerOptions extends EventReadLimits, QuarantineLimits {
  readonly js: JetStreamClient;
  readonly dataSource: DataSource;
  readonly registry: EventRegistry;
  readonly projection: Projection;
  /**
   * Most events applied in one transaction. A batch holds whole commits only, because the
   * checkpoint is a stream sequence; a single commit bigger than this is applied alone.
   */
  readonly batchSizeMax: number;
  /** Longest wait, after a batch's first event, for more events to join it. */
  readonly batchWaitMs: number;
  /** During catch-up, how long the stream may stay silent before the replay is declared stalled. */
  readonly catchUpStallMs: number;
  /** Told each new checkpoint this runner starts from or commits (e.g. to wake readers in another thread). */
  readonly onCommitted?: (checkpoint: number) => void;
  /** Told each aggregate this runner quarantines, once its row has committed (to log it, to refuse its reads at once). */
  readonly onQuarantined?: (row: QuarantinedAggregate) => void;
  /** Told how each retry of a quarantined aggregate ended (at start and on retryQuarantined). */
  readonly onRetried?: (outcome: RetryOutcome) => void;
}

export interface BatchOutcome {
  readonly applied: number;
  /** Events at or below the checkpoint: already committed, ignored. */
  readonly ignored: number;
  /** Events above the checkpoint not applied because their aggregate is quarantined. */
  readonly skipped: number;
  readonly checkpoint: number;
}

export interface CatchUpResult {
  /** Events applied (a commit may carry several). */
  readonly events: number;
  readonly batches: number;
  readonly checkpoint: number;
}

export interface CatchUpOptions {
  /** Called after each committed batch with commits (stream messages) read so far and to read in all. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** The runner stopped on a transient failure, a moved checkpoint or a gap in the stream: it is restarted, nothing is quarantined. */
export class ProjectionHalted extends Error {
  override readonly name = 'ProjectionHalted';
  constructor(
    readonly projection: string,
    readonly checkpoint: number,
    cause: unknown,
  ) {
    super(
      `projection ${projection} halted after checkpoint ${checkpoint}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/** How the read/commit loop behaves in one mode (live or catch-up). */
export interface LoopPlan {
  limit(): number;
  /** Most commits (stream messages) the next batch may hold. */
  commitsMax(): number | undefined;
  readonly firstWaitMs: number | undefined;
  readonly stop: Promise<void>;
  readonly stopAtEnd: boolean;
  /** Whether to read another batch once the current one has been read. */
  more(): boolean;
  onBatch(batch: readonly StoredEvent[]): void;
  onCommitted?(): void;
  /** A message that does not decode was set aside (its aggregate quarantined). */
  onSetAside?(): void;
  /** A read returned nothing: end the loop, read again, or throw. */
  onEmpty(): 'end' | 'again';
}
