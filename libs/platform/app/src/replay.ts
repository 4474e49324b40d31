// Rebuilding projections from the streams: in place (`tally replay`, with the service's
// projection lease held so no live runner races it) or into a scratch database to prove
// the live rows are exactly what the events say (`tally replay --verify`).
import type { JetStreamClient } from '@nats-io/jetstream';
import {
  listQuarantine,
  ProjectionRunner,
  projectionDigest,
  QUARANTINE_LIMITS,
  type CatchUpResult,
} from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import type { NatsRuntime } from './nats-runtime.js';
import type { ProjectionSpec } from './projection-host.js';

export interface ReplayProgress {
  (projection: string, done: number, total: number): void;
}

/** A runner tuned for replays: big batches, no waiting for a batch to fill. */
export function runnerFor(js: JetStreamClient, dataSource: DataSource, spec: ProjectionSpec): ProjectionRunner {
  return new ProjectionRunner({
    js,
    dataSource,
    registry: spec.registry,
    projection: spec.projection,
    batchSizeMax: 1_000,
    batchWaitMs: 0,
    catchUpStallMs: 30_000,
    prefetchMessagesMax: 8_192,
    idleHeartbeatMs: 5_000,
    pullExpiresMs: 30_000,
    ...QUARANTINE_LIMITS,
  });
}

export async function rebuildAll(
  nats: NatsRuntime,
  dataSource: DataSource,
  specs: readonly ProjectionSpec[],
  progress: ReplayProgress,
): Promise<Map<string, CatchUpResult>> {
  const results = new Map<string, CatchUpResult>();
  for (const spec of specs) {
    const runner = runnerFor(nats.js, dataSource, spec);
    results.set(
      spec.projection.name,
      await runner.rebuild({ onProgress: (done, total) => progress(spec.projection.name, done, total) }),
    );
  }
  return results;
}

export interface VerifyOutcome {
  readonly projection: string;
  readonly liveDigest: string;
  readonly rebuiltDigest: string;
  readonly liveCheckpoint: number;
  readonly rebuiltCheckpoint: number;
  /**
   * The quarantined aggregates on each side, as `subject@sequence` (ADR 0045). The digest
   * leaves the quarantine table out (it holds times of day); equal also needs these equal.
   */
  readonly liveQuarantined: readonly string[];
  readonly rebuiltQuarantined: readonly string[];
  readonly equal: boolean;
}

/**
 * Rebuilds into `scratch` and compares digests with `live`. A live projection that is
 * still moving is given a bounded number of rounds to meet the rebuilt checkpoint.
 */
export async function verifyAll(
  nats: NatsRuntime,
  live: DataSource,
  scratch: DataSource,
  specs: readonly ProjectionSpec[],
  progress: ReplayProgress,
  roundsMax = 5,
): Promise<VerifyOutcome[]> {
  const outcomes: VerifyOutcome[] = [];
  for (const spec of specs) {
    const rebuilt = runnerFor(nats.js, scratch, spec);
    const liveRunner = runnerFor(nats.js, live, spec);
    await rebuilt.rebuild({ onProgress: (d, t) => progress(spec.projection.name, d, t) });
    let outcome: VerifyOutcome | undefined;
    for (let round = 0; round < roundsMax; round++) {
      const [liveCheckpoint, rebuiltCheckpoint] = [await liveRunner.checkpoint(), await rebuilt.checkpoint()];
      if (liveCheckpoint > rebuiltCheckpoint) {
        await rebuilt.catchUp();
        continue;
      }
      const liveDigest = await projectionDigest(live, spec.projection.tables);
      const rebuiltDigest = await projectionDigest(scratch, spec.projection.tables);
      const liveQuarantined = await quarantinedOf(live, spec.projection.name);
      const rebuiltQuarantined = await quarantinedOf(scratch, spec.projection.name);
      outcome = {
        projection: spec.projection.name,
        liveDigest,
        rebuiltDigest,
        liveCheckpoint,
        rebuiltCheckpoint,
        liveQuarantined,
        rebuiltQuarantined,
        equal:
          liveDigest === rebuiltDigest &&
          liveCheckpoint === rebuiltCheckpoint &&
          liveQuarantined.join() === rebuiltQuarantined.join(),
      };
      if (outcome.equal || liveCheckpoint === rebuiltCheckpoint) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    if (!outcome) throw new Error(`projection ${spec.projection.name} kept moving; verify again when it is quiet`);
    outcomes.push(outcome);
  }
  return outcomes;
}

async function quarantinedOf(dataSource: DataSource, projection: string): Promise<string[]> {
  return (await listQuarantine(dataSource.manager, projection)).map((row) => `${row.subject}@${row.sequence}`).sort();
}
