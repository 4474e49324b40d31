// `tally projections status` and `tally projections retry` (ADR 0045). Status reads, for
// every projection of both services, its checkpoint from the projection database and its
// stream's last sequence from NATS, and lists each quarantined aggregate with its reason.
// Retry holds a service's projector lease, as `tally replay` does, and applies the events
// each quarantined aggregate holds back with this release's code.
import {
  leaseBucketOf,
  loadConfig,
  openServiceDatabaseLocked,
  OPERATOR_INBOX_PREFIX,
  ProjectionLease,
  projectorLeaseKey,
  PROJECTOR_LEASE_TTL_MS,
  runnerFor,
  startNatsRuntime,
  type NatsRuntime,
  type ProjectionSet,
  type TallyConfig,
} from '@tally/platform-app';
import type { RetryOutcome } from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import { CliError, ExitCode, usageError } from './cli/exit-codes.js';
import { printHeading, printJson, printTable } from './cli/output.js';
import { projectionSets } from './projection-sets.js';

export interface QuarantinedView {
  readonly aggregate_id: string;
  readonly subject: string;
  readonly sequence: number;
  readonly event_type: string;
  readonly reason: string;
  readonly first_seen_at: string;
  readonly skipped_events: number;
  readonly resume_sequence: number;
}

export interface ProjectionStatus {
  readonly projection: string;
  readonly service: string;
  readonly stream: string;
  readonly checkpoint: number;
  /** The stream's last sequence (of any subject), or null when the stream could not be read. */
  readonly stream_last_sequence: number | null;
  readonly lag_events: number | null;
  readonly quarantined: readonly QuarantinedView[];
}

function setsOf(only: string | undefined, config: TallyConfig): ProjectionSet[] {
  const sets = projectionSets(config).filter((s) => !only || s.service === only);
  if (sets.length === 0)
    throw usageError(
      `no projections for service ${only}`,
      `Name one of: ${projectionSets(config)
        .map((s) => s.service)
        .join(', ')}.`,
    );
  return sets;
}

/** Exit 0 when nothing is quarantined, 1 when something is (a check that found a problem). */
export async function projectionsStatus(options: { service?: string; json: boolean }): Promise<number> {
  const config = loadConfig();
  const sets = setsOf(options.service, config);
  const nats = await startNatsRuntime(config, 'tally-projections', OPERATOR_INBOX_PREFIX);
  try {
    const statuses: ProjectionStatus[] = [];
    for (const set of sets) {
      const database = await openServiceDatabaseLocked(config, set, nats, `tally-projections-${process.pid}`);
      try {
        statuses.push(...(await statusOf(set, nats, database)));
      } finally {
        await database.destroy();
      }
    }
    if (options.json) printJson({ projections: statuses });
    else printStatus(statuses);
    return statuses.some((s) => s.quarantined.length > 0) ? ExitCode.failed : ExitCode.ok;
  } finally {
    await nats.close();
  }
}

async function statusOf(set: ProjectionSet, nats: NatsRuntime, database: DataSource): Promise<ProjectionStatus[]> {
  // Loaded here, as replay.command.ts loads it: the CLI's other commands never pay for TypeORM.
  const { listQuarantine, readCheckpoint } = await import('@tally/platform-typeorm');
  const out: ProjectionStatus[] = [];
  for (const { projection } of set.specs(nats.names)) {
    const checkpoint = await readCheckpoint(database.manager, projection.name, projection.stream);
    const info = await nats.jsm.streams.info(projection.stream).catch(() => undefined);
    const last = info?.state.last_seq ?? null;
    const rows = await listQuarantine(database.manager, projection.name);
    out.push({
      projection: projection.name,
      service: set.service,
      stream: projection.stream,
      checkpoint,
      stream_last_sequence: last,
      lag_events: last === null ? null : Math.max(0, last - checkpoint),
      quarantined: rows.map((row) => ({
        aggregate_id: row.aggregateId,
        subject: row.subject,
        sequence: row.sequence,
        event_type: row.eventType,
        reason: row.reason,
        first_seen_at: new Date(row.firstSeenAtMs).toISOString(),
        skipped_events: row.skippedEvents,
        resume_sequence: row.resumeSequence,
      })),
    });
  }
  return out;
}

function printStatus(statuses: readonly ProjectionStatus[]): void {
  printTable(
    ['projection', 'service', 'stream', 'checkpoint', 'stream last', 'lag', 'quarantined'],
    statuses.map((s) => [
      s.projection,
      s.service,
      s.stream,
      s.checkpoint,
      s.stream_last_sequence,
      s.lag_events,
      s.quarantined.length,
    ]),
  );
  const quarantined = statuses.flatMap((s) => s.quarantined.map((q) => ({ projection: s.projection, ...q })));
  if (quarantined.length === 0) return;
  printHeading('Quarantined aggregates (their reads answer 503; docs/operations.md says what to do)');
  printTable(
    ['projection', 'aggregate', 'sequence', 'event type', 'skipped', 'first seen', 'reason'],
    quarantined.map((q) => [
      q.projection,
      q.aggregate_id,
      q.sequence,
      q.event_type,
      q.skipped_events,
      q.first_seen_at,
      q.reason,
    ]),
  );
}

/** Exit 0 when every quarantined aggregate now applies, 1 when some still do not. */
export async function projectionsRetry(options: { service?: string; json: boolean }): Promise<number> {
  const config = loadConfig();
  const outcomes: RetryOutcome[] = [];
  for (const set of setsOf(options.service, config)) outcomes.push(...(await retrySet(config, set)));
  if (options.json) printJson({ retried: outcomes });
  else
    printTable(
      ['projection', 'aggregate', 'result', 'applied'],
      outcomes.map((o) => [o.projection, o.aggregateId, o.result, o.applied]),
      '(nothing is quarantined)',
    );
  return outcomes.every((o) => o.result === 'cleared') ? ExitCode.ok : ExitCode.failed;
}

async function retrySet(config: TallyConfig, set: ProjectionSet): Promise<RetryOutcome[]> {
  const holder = `tally-projections-retry-${process.pid}`;
  const nats = await startNatsRuntime(config, `tally-retry-${set.service}`, OPERATOR_INBOX_PREFIX);
  try {
    const lease = await ProjectionLease.open({
      js: nats.js,
      bucket: leaseBucketOf(nats),
      key: projectorLeaseKey(set.service),
      holderId: holder,
      ttlMs: PROJECTOR_LEASE_TTL_MS,
      replicas: config.streams.replicas,
    });
    if (!(await lease.tryAcquire()))
      throw new CliError(
        `a running ${set.service} holds the projector lease`,
        ExitCode.failed,
        'Restart that replica instead: a projector retries its quarantined aggregates when it starts.',
      );
    const renew = setInterval(() => void lease.tryAcquire(), 3_000);
    const database = await openServiceDatabaseLocked(config, set, nats, holder);
    try {
      const outcomes: RetryOutcome[] = [];
      for (const spec of set.specs(nats.names))
        outcomes.push(...(await runnerFor(nats.js, database, spec).retryQuarantined()));
      return outcomes;
    } finally {
      clearInterval(renew);
      await lease.release();
      await database.destroy();
    }
  } finally {
    await nats.close();
  }
}
