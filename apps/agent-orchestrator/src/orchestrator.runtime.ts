// The orchestrator's collaborators, built once from the service host's context and
// shared by the HTTP controllers, the submission subject and the dispatch workers.
import { jetstream } from '@nats-io/jetstream';
import { sizeLimitsOf } from '@tally/contracts';
import {
  outputLimitsOf,
  WorkUnitRepository,
  WorkUnits,
  workEventRegistry,
  type OutputLimits,
  type OutputStore,
} from '@tally/orchestrator-application';
import { WorkProjectionReads } from '@tally/orchestrator-projections';
import type { HostContext } from '@tally/platform-app';
import { JetStreamEventStore } from '@tally/platform-jetstream';
import { JetStreamOutputStore } from './work/jetstream-output-store.js';
import { PrefixCachedEventStore } from './work/prefix-cached-event-store.js';

/** Events a single work unit may hold: ~4 per attempt under the largest ceiling, with room to spare. */
export const UNIT_EVENTS_MAX = 10_000;
/** Bound on reload-and-decide when a command meets a concurrent append. */
export const CONFLICT_RETRIES_MAX = 8;

export interface OrchestratorRuntime {
  readonly ctx: HostContext;
  readonly repository: WorkUnitRepository;
  readonly units: WorkUnits;
  readonly reads: WorkProjectionReads;
  /** Replies too large for their events (ADR 0019): written by the workers, resolved by the reads. */
  readonly outputs: { readonly store: OutputStore; readonly limits: OutputLimits };
  /** Core NATS subject the API publishes a work id on when its abort is recorded; workers listen. */
  readonly abortSubject: string;
}

export const clock = { nowMs: () => Date.now() };

export function abortSubjectOf(namespace: string): string {
  // Outside every stream's subjects (work.evt.>, work.queue): a notification, not a record.
  return `${namespace}.work.abort`;
}

export function buildRuntime(ctx: HostContext): OrchestratorRuntime {
  const { nats, config, dataSource } = ctx;
  const store = new JetStreamEventStore(jetstream(nats.nc, { timeout: config.nats.publish_timeout_ms }), nats.jsm, {
    stream: nats.names.workEventsStream,
    registry: workEventRegistry(),
    publishTimeoutMs: config.nats.publish_timeout_ms,
    loadEventsMax: UNIT_EVENTS_MAX,
    loadIdleTimeoutMs: config.nats.publish_timeout_ms,
  });
  // Enough for every unit in flight here plus recent API reads.
  const cached = new PrefixCachedEventStore(store, 2 * config.orchestrator.worker_concurrency + 1_024);
  const repository = new WorkUnitRepository(cached, (id) => nats.names.workEventSubject(id));
  return {
    ctx,
    repository,
    outputs: outputsOf(ctx),
    units: new WorkUnits(repository, clock, CONFLICT_RETRIES_MAX),
    reads: new WorkProjectionReads(() => dataSource.manager),
    abortSubject: abortSubjectOf(nats.names.namespace),
  };
}

/** JSON may write a character of the reply as six (`\u0000`): the blob's bound, in chunks. */
const JSON_EXPANSION_MAX = 6;

function outputsOf(ctx: HostContext): OrchestratorRuntime['outputs'] {
  const { nats, config } = ctx;
  const limits = outputLimitsOf(config.streams.max_msg_size_bytes, config.orchestrator.output_bytes_max);
  const chunkBytes = sizeLimitsOf(config.streams.max_msg_size_bytes).eventBytesMax;
  const store = new JetStreamOutputStore(
    jetstream(nats.nc, { timeout: config.nats.publish_timeout_ms }),
    nats.jsm,
    nats.names,
    {
      chunkBytes,
      chunksMax: Math.ceil((JSON_EXPANSION_MAX * limits.bytesMax + chunkBytes) / chunkBytes),
      publishTimeoutMs: config.nats.publish_timeout_ms,
    },
  );
  return { store, limits };
}
