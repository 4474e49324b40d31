// Streams and consumers are created from code with every limit set explicitly.
// Start-up is idempotent; a stream that exists with a conflicting configuration is
// refused with a message naming each conflicting setting, never silently "fixed".
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';

const NS_PER_MS = 1_000_000;
const STREAM_NOT_FOUND = 10059;
const CONSUMER_NOT_FOUND = 10014;

export interface StreamSpec {
  readonly name: string;
  readonly subjects: readonly string[];
  readonly retention: 'limits' | 'workqueue';
  readonly storage: 'file' | 'memory';
  readonly replicas: number;
  readonly duplicateWindowMs: number;
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  readonly maxMsgSizeBytes: number;
  /**
   * What the server does at a limit: 'new' refuses the new message (the publisher gets an
   * error, nothing is lost), 'old' deletes the oldest messages to make room.
   */
  readonly discard: 'new' | 'old';
  readonly denyDelete: boolean;
  readonly denyPurge: boolean;
}

export interface ConsumerSpec {
  readonly stream: string;
  readonly durable: string;
  readonly filterSubject: string;
  readonly ackWaitMs: number;
  readonly deliveriesMax: number;
  readonly ackPendingMax: number;
  /** Where a new consumer starts; ignored once it exists. */
  readonly startSequence?: number;
  /** Deliver each message's headers only (the consumer reads a body it needs by direct get). */
  readonly headersOnly?: boolean;
}

export class StreamConfigConflict extends Error {
  override readonly name = 'StreamConfigConflict';
  constructor(
    readonly stream: string,
    readonly conflicts: readonly string[],
    hint = 'Tally refuses to change it in place; fix the stream (or the config) and restart.',
  ) {
    super(`stream ${stream} exists with a conflicting configuration: ${conflicts.join('; ')}. ${hint}`);
  }
}

export function toStreamConfig(spec: StreamSpec): Partial<StreamConfig> & { name: string } {
  return {
    name: spec.name,
    subjects: [...spec.subjects],
    retention: spec.retention === 'workqueue' ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
    storage: spec.storage === 'file' ? StorageType.File : StorageType.Memory,
    num_replicas: spec.replicas,
    duplicate_window: spec.duplicateWindowMs * NS_PER_MS,
    max_age: spec.maxAgeMs * NS_PER_MS,
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxMsgSizeBytes,
    max_msgs: -1,
    max_msgs_per_subject: -1,
    discard: spec.discard === 'new' ? DiscardPolicy.New : DiscardPolicy.Old,
    deny_delete: spec.denyDelete,
    deny_purge: spec.denyPurge,
    allow_direct: true,
  };
}

/** Compares the settings Tally owns; returns one line per difference. */
export function streamConflicts(spec: StreamSpec, actual: StreamConfig): string[] {
  const wanted = toStreamConfig(spec);
  const conflicts: string[] = [];
  const keys = [
    'retention',
    'storage',
    'num_replicas',
    'duplicate_window',
    'max_age',
    'max_bytes',
    'max_msg_size',
    'max_msgs',
    'max_msgs_per_subject',
    'discard',
    'deny_delete',
    'deny_purge',
  ] as const;
  for (const key of keys) {
    if (wanted[key] !== actual[key])
      conflicts.push(`${key} is ${String(actual[key])}, expected ${String(wanted[key])}`);
  }
  const actualSubjects = [...(actual.subjects ?? [])].sort().join(',');
  const wantedSubjects = [...spec.subjects].sort().join(',');
  if (actualSubjects !== wantedSubjects)
    conflicts.push(`subjects are [${actualSubjects}], expected [${wantedSubjects}]`);
  return conflicts;
}

/** Reads the stream's configuration: undefined when it does not exist, else one line per conflict. */
export async function inspectStream(jsm: JetStreamManager, spec: StreamSpec): Promise<string[] | undefined> {
  try {
    const info = await jsm.streams.info(spec.name);
    return streamConflicts(spec, info.config);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return undefined;
    throw error;
  }
}

export async function ensureStream(jsm: JetStreamManager, spec: StreamSpec): Promise<'created' | 'verified'> {
  const conflicts = await inspectStream(jsm, spec);
  if (conflicts === undefined) {
    await jsm.streams.add(toStreamConfig(spec));
    return 'created';
  }
  if (conflicts.length > 0) throw new StreamConfigConflict(spec.name, conflicts);
  return 'verified';
}

export interface StreamReconciled {
  readonly name: string;
  readonly outcome: 'created' | 'verified' | 'updated';
  /** One line per setting changed in place. */
  readonly changes: readonly string[];
  /** What an operator must know, e.g. that an event stream had already lost its oldest events. */
  readonly warnings: readonly string[];
}

/** Settings JetStream cannot change on an existing stream. */
const FIXED_SETTINGS = new Set(['retention', 'storage']);

/**
 * Creates the stream, or moves an existing one to the spec in place (`tally provision`,
 * `tally migrate`). Refused, naming why, when the server cannot make the change
 * (retention, storage, lifting deny_delete/deny_purge) or when it would delete messages:
 * a byte limit below what the stream already holds makes the server drop its oldest.
 */
export async function reconcileStream(jsm: JetStreamManager, spec: StreamSpec): Promise<StreamReconciled> {
  let info;
  try {
    info = await jsm.streams.info(spec.name);
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== STREAM_NOT_FOUND) throw error;
    await jsm.streams.add(toStreamConfig(spec));
    return { name: spec.name, outcome: 'created', changes: [], warnings: [] };
  }
  const warnings: string[] = [];
  // An event stream that already lost its head (the old discard: old policy) cannot be repaired here.
  if (spec.denyPurge && info.state.first_seq > 1)
    warnings.push(
      `stream ${spec.name} starts at sequence ${info.state.first_seq}: events 1..${info.state.first_seq - 1} were ` +
        `already deleted by its old limits; loads and replays of the affected aggregates will fail until it is restored`,
    );
  const changes = streamConflicts(spec, info.config);
  if (changes.length === 0) return { name: spec.name, outcome: 'verified', changes, warnings };
  const blocked = changes.filter((c) => FIXED_SETTINGS.has(c.split(' ')[0]!));
  if (info.config.deny_delete && !spec.denyDelete) blocked.push('deny_delete cannot be lifted once set');
  if (info.config.deny_purge && !spec.denyPurge) blocked.push('deny_purge cannot be lifted once set');
  if (spec.maxBytes > 0 && info.state.bytes > spec.maxBytes)
    blocked.push(
      `max_bytes ${spec.maxBytes} is below the ${info.state.bytes} bytes it holds: the server would delete its oldest messages`,
    );
  if (blocked.length > 0)
    throw new StreamConfigConflict(
      spec.name,
      blocked,
      'The server cannot make this change safely; nothing was changed.',
    );
  const { name, ...config } = toStreamConfig(spec);
  await jsm.streams.update(name, config);
  const left = streamConflicts(spec, (await jsm.streams.info(spec.name)).config);
  if (left.length > 0) throw new StreamConfigConflict(spec.name, left);
  return { name: spec.name, outcome: 'updated', changes, warnings };
}

export function toConsumerConfig(spec: ConsumerSpec): Partial<ConsumerConfig> {
  const start =
    spec.startSequence && spec.startSequence > 1
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: spec.startSequence }
      : { deliver_policy: DeliverPolicy.All };
  return {
    durable_name: spec.durable,
    filter_subject: spec.filterSubject,
    ack_policy: AckPolicy.Explicit,
    ack_wait: spec.ackWaitMs * NS_PER_MS,
    max_deliver: spec.deliveriesMax,
    max_ack_pending: spec.ackPendingMax,
    replay_policy: ReplayPolicy.Instant,
    ...(spec.headersOnly ? { headers_only: true } : {}),
    ...start,
  };
}

/** Compares the settings Tally owns on a durable consumer; returns one line per difference. */
export function consumerConflicts(spec: ConsumerSpec, actual: ConsumerConfig): string[] {
  const wanted = toConsumerConfig(spec);
  const conflicts: string[] = [];
  if (actual.filter_subject !== spec.filterSubject)
    conflicts.push(`filter_subject is ${String(actual.filter_subject)}, expected ${spec.filterSubject}`);
  for (const key of ['ack_policy', 'ack_wait', 'max_deliver', 'max_ack_pending'] as const) {
    if (wanted[key] !== actual[key])
      conflicts.push(`${key} is ${String(actual[key])}, expected ${String(wanted[key])}`);
  }
  return conflicts;
}

/** Reads the durable consumer: undefined when it does not exist, else one line per difference. */
export async function inspectConsumer(jsm: JetStreamManager, spec: ConsumerSpec): Promise<string[] | undefined> {
  try {
    return consumerConflicts(spec, (await jsm.consumers.info(spec.stream, spec.durable)).config);
  } catch (error) {
    if (error instanceof JetStreamApiError && (error.code === CONSUMER_NOT_FOUND || error.code === STREAM_NOT_FOUND))
      return undefined;
    throw error;
  }
}

/**
 * Creates the durable consumer, or updates its limits when it exists with the same filter.
 * A consumer that already has the spec is only read, so a service whose user may not
 * create consumers (nats.provision: check) passes here once `tally provision` made it.
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  spec: ConsumerSpec,
): Promise<'created' | 'updated' | 'verified'> {
  const config = toConsumerConfig(spec);
  const conflicts = await inspectConsumer(jsm, spec);
  if (conflicts === undefined) {
    await jsm.consumers.add(spec.stream, config);
    return 'created';
  }
  if (conflicts.length === 0) return 'verified';
  if (conflicts.some((c) => c.startsWith('filter_subject') || c.startsWith('ack_policy')))
    throw new Error(`consumer ${spec.durable} on ${spec.stream}: ${conflicts.join('; ')}; delete it or fix the config`);
  await jsm.consumers.update(spec.stream, spec.durable, {
    ack_wait: config.ack_wait!,
    max_deliver: config.max_deliver!,
    max_ack_pending: config.max_ack_pending!,
  });
  return 'updated';
}
