// Runs a service's projections on the replica that holds the projection lease, restarts
// a halted runner with a bounded backoff (a halt is a bug, so it is logged loudly), and
// lets request handlers wait until their own append has been projected.
import type { JetStreamClient } from '@nats-io/jetstream';
import type { EventRegistry } from '@tally/contracts';
import {
  pollCheckpoint,
  ProjectionRunner,
  QUARANTINE_LIMITS,
  type Projection,
  type QuarantinedAggregate,
  type RetryOutcome,
} from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import type { JsonLogger } from './json-logger.js';
import type { ReadinessCheck } from './health.js';
import type { ProjectionLease } from './projection-lease.js';

export interface ProjectionSpec {
  readonly projection: Projection;
  readonly registry: EventRegistry;
}

export interface ProjectionHostOptions {
  readonly js: JetStreamClient;
  readonly dataSource: DataSource;
  readonly specs: readonly ProjectionSpec[];
  readonly lease: ProjectionLease;
  readonly logger: JsonLogger;
  readonly leaseRenewMs: number;
  readonly restartDelayMaxMs: number;
  readonly batchSizeMax: number;
  readonly batchWaitMs: number;
  readonly waitPollMs: number;
  /** Told each checkpoint a runner starts from or commits. */
  readonly onCommitted?: (projection: string, checkpoint: number) => void;
  /** Told each aggregate a runner quarantines (ADR 0045), after it is logged. */
  readonly onQuarantined?: (row: QuarantinedAggregate) => void;
}

/** The host's limits as the services run it. batchWaitMs 0: a batch is what has arrived; under load batches grow on their own while the previous one commits. */
export const PROJECTION_HOST_LIMITS = {
  leaseRenewMs: 3_000,
  restartDelayMaxMs: 30_000,
  batchSizeMax: 500,
  batchWaitMs: 0,
  waitPollMs: 5,
} as const;

/** What the rest of a service sees of its projections, wherever they run (this thread or a worker thread). */
export interface Projections {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves once `projection` has committed `sequence`; false on timeout. Any replica can ask. */
  waitFor(projectionName: string, sequence: number, timeoutMs: number): Promise<boolean>;
  readiness(): ReadinessCheck;
  /** Test-only fault injection: ends the projection thread abruptly, as a crash would. Absent when projections run on the main thread. */
  kill?(): Promise<void>;
}

export class ProjectionHost implements Projections {
  private readonly runners: ProjectionRunner[];
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private restarts = 0;

  constructor(private readonly options: ProjectionHostOptions) {
    this.runners = options.specs.map(
      (spec) =>
        new ProjectionRunner({
          js: options.js,
          dataSource: options.dataSource,
          registry: spec.registry,
          projection: spec.projection,
          batchSizeMax: options.batchSizeMax,
          batchWaitMs: options.batchWaitMs,
          catchUpStallMs: 30_000,
          prefetchMessagesMax: 4_096,
          idleHeartbeatMs: 5_000,
          pullExpiresMs: 30_000,
          ...QUARANTINE_LIMITS,
          ...(options.onCommitted
            ? { onCommitted: (checkpoint: number) => options.onCommitted!(spec.projection.name, checkpoint) }
            : {}),
          onQuarantined: (row) => this.quarantined(row),
          onRetried: (outcome) => this.retried(outcome),
        }),
    );
  }

  /** Logged once, here, with what an operator needs to find it; never the event's content. */
  private quarantined(row: QuarantinedAggregate): void {
    this.options.logger.event('error', 'projection quarantined an aggregate: its reads answer 503 until it applies', {
      projection: row.projection,
      aggregate_id: row.aggregateId,
      sequence: row.sequence,
      event_type: row.eventType,
      reason: row.reason,
    });
    this.options.onQuarantined?.(row);
  }

  private retried(outcome: RetryOutcome): void {
    const cleared = outcome.result === 'cleared';
    this.options.logger.event(
      cleared ? 'info' : 'warn',
      cleared ? 'quarantined aggregate applied; it leaves quarantine' : 'quarantined aggregate still does not apply',
      {
        projection: outcome.projection,
        aggregate_id: outcome.aggregateId,
        result: outcome.result,
        applied: outcome.applied,
      },
    );
  }

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.options.leaseRenewMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.stopRunners();
    await this.options.lease.release();
  }

  /** Resolves once `projection` has committed `sequence`; false on timeout. Any replica can ask. */
  async waitFor(projectionName: string, sequence: number, timeoutMs: number): Promise<boolean> {
    const spec = this.options.specs.find((s) => s.projection.name === projectionName);
    if (!spec) throw new Error(`unknown projection ${projectionName}`);
    // On the replica that runs the projection, wait for the runner itself; elsewhere, poll.
    const local = this.running ? this.runners.find((r) => r.projection.name === projectionName) : undefined;
    if (local && (await local.waitCommitted(sequence, timeoutMs))) return true;
    return pollCheckpoint(
      this.options.dataSource,
      spec.projection,
      sequence,
      local ? 0 : timeoutMs,
      this.options.waitPollMs,
    );
  }

  /** Whether this replica holds the lease, and how often a halted runner was restarted. */
  status(): { readonly leader: boolean; readonly restarts: number } {
    return { leader: this.options.lease.held, restarts: this.restarts };
  }

  readiness(): ReadinessCheck {
    return {
      name: 'projections',
      check: async () => {
        const checkpoints: Record<string, number> = {};
        for (const runner of this.runners) checkpoints[runner.projection.name] = await runner.checkpoint();
        return { ok: true, details: { leader: this.options.lease.held, restarts: this.restarts, checkpoints } };
      },
    };
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const leader = await this.options.lease.tryAcquire();
    if (leader && !this.running) this.startRunners();
    if (!leader && this.running) {
      this.options.logger.event('warn', 'projection lease lost; stopping projections on this replica');
      await this.stopRunners();
    }
  }

  private startRunners(): void {
    this.running = true;
    this.options.logger.event('info', 'projection lease taken; running projections', {
      projections: this.runners.map((r) => r.projection.name),
    });
    for (const runner of this.runners) void this.supervise(runner);
  }

  private async supervise(runner: ProjectionRunner): Promise<void> {
    let delayMs = 100;
    while (this.running && !this.stopped) {
      try {
        await runner.start();
        return;
      } catch (error) {
        this.restarts++;
        this.options.logger.event('error', 'projection halted on a transient failure; restarting', {
          projection: runner.projection.name,
          error: (error as Error).message,
          delay_ms: delayMs,
        });
        await new Promise((r) => setTimeout(r, delayMs));
        delayMs = Math.min(delayMs * 2, this.options.restartDelayMaxMs);
      }
    }
  }

  private async stopRunners(): Promise<void> {
    this.running = false;
    await Promise.all(this.runners.map((r) => r.stop()));
  }
}
