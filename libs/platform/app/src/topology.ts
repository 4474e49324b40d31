// What Tally keeps on the NATS server: the streams, the durable consumers and the KV
// buckets, each with every limit derived from config in this one place. `tally provision`
// (the migrations Job) creates and updates all of it; a service booting with
// `nats.provision: check` only reads what it needs and refuses to start, naming each
// difference, when something is missing or set otherwise (ADR 0015).
import type { JetStreamManager } from '@nats-io/jetstream';
import type { CommandService, TallyNames } from '@tally/contracts';
import {
  ensureConsumer,
  idempotencyBucketSpec,
  inspectConsumer,
  inspectKvBucket,
  inspectStream,
  kvStreamName,
  reconcileKvBucket,
  reconcileStream,
  replyBucketSpec,
  tallyStreamSpecs,
  type ConsumerSpec,
  type KvBucketSpec,
  type ReplyBucketLimits,
  type StreamSpec,
} from '@tally/platform-jetstream';
import { durableNameFor } from '@tally/platform-nest';
import type { TallyConfig } from './config.schema.js';
import { idempotencyLimitsOf, streamLimitsOf } from './nats-runtime.js';
import { leaseBucketSpec } from './projection-lease.js';
import { leaseBucketName, PROJECTOR_LEASE_TTL_MS } from './service-database.js';
import {
  REVOCATION_RELAY_CONSUMER,
  revocationRelayConsumerSpec,
  revocationsBucketSpec,
} from './revocations-topology.js';
import { signatureReplayBucketSpec } from './signature-replay.js';
import { webhookConsumerSpecs, webhookNames, webhookStreamSpecs } from './webhook-topology.js';

export type TallyService = 'budget-authority' | 'agent-orchestrator';
export const TALLY_SERVICES: readonly TallyService[] = ['budget-authority', 'agent-orchestrator'];

/** The commands each service answers, which also names its own buckets (replies, spent signatures). */
export function commandServiceOf(service: string): CommandService {
  if (service === 'budget-authority') return 'budget';
  if (service === 'agent-orchestrator') return 'work';
  throw new Error(`${service} is not a Tally service (${TALLY_SERVICES.join(', ')})`);
}

/**
 * The buckets every replica of both services shared before ADR 0051, where either could empty
 * the other's: no longer used, named so that `tally provision` can say they may go.
 */
export function retiredBucketsOf(names: TallyNames): string[] {
  const upper = names.budgetEventsStream.replace(/_BUDGET_EVENTS$/, '');
  return [`${upper}_COMMAND_REPLIES`, `${upper}_SIGNATURE_REPLAY`];
}

/** Budget commands one authority replica handles at once (its durable consumer's ack-pending floor). */
export const BUDGET_COMMANDS_CONCURRENCY_MAX = 256;
/** Work submissions one orchestrator replica handles at once. */
export const WORK_COMMANDS_CONCURRENCY_MAX = 64;
/** The shared durable consumer the orchestrator's workers pull submitted work from. */
export const DISPATCH_CONSUMER = 'dispatch-workers';
const REPLY_CACHE_BYTES_MAX = 256 * 1024 * 1024;
const REPLY_CACHE_TTL_MS = 24 * 3_600_000;

export interface TallyTopology {
  readonly streams: readonly StreamSpec[];
  readonly buckets: readonly KvBucketSpec[];
  readonly consumers: readonly ConsumerSpec[];
}

/** Each command-reply cache (one per answering service): a re-sent command within the TTL gets its first answer. */
export function replyBucketLimitsOf(config: TallyConfig): ReplyBucketLimits {
  return {
    ttlMs: Math.max(REPLY_CACHE_TTL_MS, config.streams.duplicate_window_ms),
    replicas: config.streams.replicas,
    maxBytes: Math.min(REPLY_CACHE_BYTES_MAX, config.streams.queue_max_bytes),
    maxValueSizeBytes: config.streams.max_msg_size_bytes,
  };
}

/** How many handlers a command server runs at once. */
export function commandConcurrencyOf(config: TallyConfig, service: CommandService): number {
  return service === 'budget'
    ? Math.max(BUDGET_COMMANDS_CONCURRENCY_MAX, config.consumers.fetch_batch)
    : WORK_COMMANDS_CONCURRENCY_MAX;
}

/** How often a command is delivered before it is dead-lettered (at least twice). */
export function commandDeliveriesOf(config: TallyConfig): number {
  return Math.max(2, config.consumers.deliveries_max);
}

/** A command server's durable consumer; the server may deliver once more than its handler runs (the dead-letter spare). */
export function commandConsumerSpec(config: TallyConfig, names: TallyNames, service: CommandService): ConsumerSpec {
  const c = config.consumers;
  return {
    stream: names.commandsStream,
    durable: durableNameFor(service),
    filterSubject: names.commandWildcard(service),
    ackWaitMs: c.ack_wait_ms,
    deliveriesMax: commandDeliveriesOf(config) + 1,
    ackPendingMax: Math.max(c.ack_pending_max, commandConcurrencyOf(config, service)),
  };
}

/** The workers' durable consumer on the work queue. */
export function dispatchConsumerSpec(config: TallyConfig, names: TallyNames): ConsumerSpec {
  const c = config.consumers;
  return {
    stream: names.workQueueStream,
    durable: DISPATCH_CONSUMER,
    filterSubject: names.workQueueSubject,
    ackWaitMs: c.ack_wait_ms,
    deliveriesMax: c.deliveries_max + 1,
    ackPendingMax: c.ack_pending_max,
  };
}

function bucketsOf(config: TallyConfig, names: TallyNames): KvBucketSpec[] {
  const replicas = config.streams.replicas;
  return [
    // Each written only by the service that answers those commands (ADR 0051).
    replyBucketSpec(names, 'budget', replyBucketLimitsOf(config)),
    replyBucketSpec(names, 'work', replyBucketLimitsOf(config)),
    // Shared, because the migration lock is: both services migrate one database. Each service
    // may write only its own projector key and the lock (nats-permissions.ts).
    leaseBucketSpec(leaseBucketName(names.namespace), PROJECTOR_LEASE_TTL_MS, replicas),
    // The Idempotency-Key records of the authority's HTTP calls (ADR 0023).
    idempotencyBucketSpec(names, idempotencyLimitsOf(config)),
    // Spent subject signatures (ADR 0011), one bucket per verifying service, kept for the
    // longest window any allowed skew needs.
    signatureReplayBucketSpec(names, 'budget', replicas),
    signatureReplayBucketSpec(names, 'work', replicas),
    // Revoked capabilities, refused at the door of every replica (ADR 0049): written by the
    // authority only, followed by both services (nats-permissions.ts).
    revocationsBucketSpec(names, replicas),
  ];
}

/** Everything `tally provision` creates for this config. */
export function tallyTopology(config: TallyConfig, names: TallyNames): TallyTopology {
  const webhooks = webhookNames(names);
  const consumers = [
    commandConsumerSpec(config, names, 'work'),
    dispatchConsumerSpec(config, names),
    revocationRelayConsumerSpec(config, names),
  ];
  // The authority consumes the command stream only while budget commands travel over JetStream (ADR 0025).
  if (config.nats.budget_commands === 'jetstream') consumers.unshift(commandConsumerSpec(config, names, 'budget'));
  // Webhooks are delivered by the replicas that deliver (ADR 0040).
  if (config.webhooks.deliver) consumers.push(...webhookConsumerSpecs(config, names, webhooks));
  return {
    streams: [...tallyStreamSpecs(names, streamLimitsOf(config)), ...webhookStreamSpecs(webhooks, config)],
    buckets: bucketsOf(config, names),
    consumers,
  };
}

/** The streams, buckets and durable consumers each service uses (reads or writes), by name. */
function usedBy(
  service: TallyService,
  names: TallyNames,
): { streams: string[]; buckets: string[]; durables: string[] } {
  const w = webhookNames(names);
  const shared = [names.budgetEventsStream, names.directoryEventsStream, names.commandsStream, names.deadLetterStream];
  const own = commandServiceOf(service);
  const buckets = [
    names.commandRepliesBucket(own),
    leaseBucketName(names.namespace),
    names.signatureReplayBucket(own),
    // Written by the authority, followed by every replica of both services (ADR 0049).
    names.revocationsBucket,
  ];
  return service === 'budget-authority'
    ? {
        streams: [...shared, w.eventsStream, w.outboxStream],
        buckets: [...buckets, names.idempotencyBucket],
        durables: [durableNameFor('budget'), w.fanoutDurable, w.deliveryDurable, REVOCATION_RELAY_CONSUMER],
      }
    : {
        // The budget events are read for the grants an MCP session offers, and the authority's
        // replies for budget commands over JetStream (never written).
        streams: [...shared, names.workEventsStream, names.workOutputStream, names.workQueueStream],
        buckets: [...buckets, names.commandRepliesBucket('budget')],
        durables: [durableNameFor('work'), DISPATCH_CONSUMER],
      };
}

/** What one service reads and writes, so what its boot checks. Anything else (the CLI) needs every stream. */
export function serviceTopology(config: TallyConfig, names: TallyNames, service: string): TallyTopology {
  const all = tallyTopology(config, names);
  if (!TALLY_SERVICES.includes(service as TallyService)) return { streams: all.streams, buckets: [], consumers: [] };
  const used = usedBy(service as TallyService, names);
  const runs = (durable: string) => durable !== DISPATCH_CONSUMER || config.orchestrator.run_workers;
  return {
    streams: all.streams.filter((s) => used.streams.includes(s.name)),
    buckets: all.buckets.filter((b) => used.buckets.includes(b.bucket)),
    consumers: all.consumers.filter((c) => used.durables.includes(c.durable) && runs(c.durable)),
  };
}

export class TopologyMismatch extends Error {
  override readonly name = 'TopologyMismatch';
  constructor(
    readonly service: string,
    readonly differences: readonly string[],
  ) {
    super(
      `${service} found the NATS server not provisioned for it (nats.provision is check):\n` +
        differences.map((d) => `  - ${d}`).join('\n') +
        '\nRun `tally provision` (the migrations Job runs it) with this configuration, or fix the configuration.',
    );
  }
}

/** Reads what the topology names; returns one line per missing or different thing (empty: all as expected). */
export async function checkTopology(jsm: JetStreamManager, topology: TallyTopology): Promise<string[]> {
  const out: string[] = [];
  const report = (what: string, conflicts: string[] | undefined) => {
    if (conflicts === undefined) out.push(`${what} is missing`);
    else for (const c of conflicts) out.push(`${what}: ${c}`);
  };
  for (const s of topology.streams) report(`stream ${s.name}`, await inspectStream(jsm, s));
  for (const b of topology.buckets)
    report(`KV bucket ${b.bucket} (stream ${kvStreamName(b.bucket)})`, await inspectKvBucket(jsm, b));
  for (const c of topology.consumers) report(`consumer ${c.durable} on ${c.stream}`, await inspectConsumer(jsm, c));
  return out;
}

/**
 * Creates what is missing and moves what differs to the topology, in place and without
 * losing a message (reconcileStream refuses what the server cannot change safely).
 * Streams come first: buckets and consumers live on them.
 */
export async function provisionTopology(
  jsm: JetStreamManager,
  topology: TallyTopology,
  say: (line: string) => void,
): Promise<void> {
  for (const spec of topology.streams) {
    const done = await reconcileStream(jsm, spec);
    for (const warning of done.warnings) say(`WARNING: ${warning}`);
    say(`stream ${spec.name} ${done.outcome}${done.changes.length > 0 ? `: ${done.changes.join('; ')}` : ''}`);
  }
  for (const bucket of topology.buckets) {
    const done = await reconcileKvBucket(jsm, bucket);
    say(`KV bucket ${bucket.bucket} ${done.outcome}${done.changes.length > 0 ? `: ${done.changes.join('; ')}` : ''}`);
  }
  for (const consumer of topology.consumers)
    say(`consumer ${consumer.durable} on ${consumer.stream} ${await ensureConsumer(jsm, consumer)}`);
}

/** The retired buckets still on the server: the operator deletes them once no replica of an earlier release runs. */
export async function retiredBucketsPresent(jsm: JetStreamManager, names: TallyNames): Promise<string[]> {
  const present: string[] = [];
  for (const bucket of retiredBucketsOf(names)) {
    const exists = await jsm.streams.info(kvStreamName(bucket)).then(
      () => true,
      () => false,
    );
    if (exists) present.push(bucket);
  }
  return present;
}
