// The streams and the command-reply bucket every Tally service relies on, derived from
// TallyNames with every limit passed in explicitly. Each stream kind has its own policy
// (ADR 0002): the event streams are the ledger and never lose a message, the queues refuse
// work when full, and only the dead-letter stream ages out its oldest records.
import type { JetStreamClient, JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import { JetStreamApiError, StorageType } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { TallyNames } from '@tally/contracts';
import { ensureStream, inspectStream, StreamConfigConflict, type StreamSpec } from './provisioning.js';

const NS_PER_MS = 1_000_000;
const STREAM_NOT_FOUND = 10059;

export interface StreamLimits {
  readonly storage: 'file' | 'memory';
  readonly replicas: number;
  readonly duplicateWindowMs: number;
  readonly maxMsgSizeBytes: number;
  /**
   * Byte limit of each event stream (the ledger), or -1 for none. A full event stream
   * refuses appends (discard: new); it never deletes an event to make room.
   */
  readonly eventMaxBytes: number;
  /** Byte limit of the work queue and of the command stream; a full one refuses new messages. */
  readonly queueMaxBytes: number;
  /** The dead-letter stream keeps at most this many bytes, for at most this long, dropping its oldest first. */
  readonly deadLetterMaxBytes: number;
  readonly deadLetterMaxAgeMs: number;
}

export type TallyStreamKind =
  | 'budgetEvents'
  | 'workEvents'
  /** Tenants, operator keys and signing keys (ADR 0010): ledger, with the event streams' policy. */
  | 'directoryEvents'
  /** Provider output kept by reference (ADR 0019): part of the record, with the event streams' policy. */
  | 'workOutput'
  | 'workQueue'
  | 'commands'
  | 'deadLetter';

/** Bad limits are a configuration bug: refuse them before they reach the server. */
function assertLimits(limits: StreamLimits): void {
  const bad: string[] = [];
  if (!Number.isInteger(limits.replicas) || limits.replicas < 1 || limits.replicas > 5)
    bad.push(`replicas=${limits.replicas} must be 1..5`);
  if (!(limits.duplicateWindowMs > 0)) bad.push(`duplicateWindowMs=${limits.duplicateWindowMs} must be > 0`);
  if (!(limits.eventMaxBytes === -1 || limits.eventMaxBytes > 0))
    bad.push(`eventMaxBytes=${limits.eventMaxBytes} must be -1 or > 0`);
  if (!(limits.queueMaxBytes > 0)) bad.push(`queueMaxBytes=${limits.queueMaxBytes} must be > 0`);
  if (!(limits.deadLetterMaxBytes > 0)) bad.push(`deadLetterMaxBytes=${limits.deadLetterMaxBytes} must be > 0`);
  if (!(limits.deadLetterMaxAgeMs > 0)) bad.push(`deadLetterMaxAgeMs=${limits.deadLetterMaxAgeMs} must be > 0`);
  // The server clamps the duplicate window to max_age; the stored value would then never match ours.
  if (limits.duplicateWindowMs > limits.deadLetterMaxAgeMs)
    bad.push(`duplicateWindowMs=${limits.duplicateWindowMs} exceeds deadLetterMaxAgeMs=${limits.deadLetterMaxAgeMs}`);
  if (!(limits.maxMsgSizeBytes > 0)) bad.push(`maxMsgSizeBytes=${limits.maxMsgSizeBytes} must be > 0`);
  if (bad.length > 0) throw new Error(`invalid stream limits: ${bad.join('; ')}`);
}

type Policy = Pick<StreamSpec, 'retention' | 'discard' | 'maxAgeMs' | 'maxBytes' | 'denyDelete' | 'denyPurge'>;

/** Each kind's policy, the one table ADR 0002 writes down. */
function policyOf(kind: TallyStreamKind, limits: StreamLimits): Policy {
  switch (kind) {
    case 'budgetEvents':
    case 'workEvents':
    case 'directoryEvents':
    case 'workOutput':
      // The ledger: no age or count limit, a byte limit only when the operator sets one, and
      // then a full stream refuses the append. No message can be deleted or purged.
      return {
        retention: 'limits',
        discard: 'new',
        maxAgeMs: 0,
        maxBytes: limits.eventMaxBytes,
        denyDelete: true,
        denyPurge: true,
      };
    case 'workQueue':
    case 'commands':
      // Acked messages leave on their own (work-queue retention); a full queue refuses new work.
      return {
        retention: 'workqueue',
        discard: 'new',
        maxAgeMs: 0,
        maxBytes: limits.queueMaxBytes,
        denyDelete: false,
        denyPurge: false,
      };
    case 'deadLetter':
      // Operational records: the oldest go first, by age or size, and an operator may clear them.
      return {
        retention: 'limits',
        discard: 'old',
        maxAgeMs: limits.deadLetterMaxAgeMs,
        maxBytes: limits.deadLetterMaxBytes,
        denyDelete: false,
        denyPurge: false,
      };
  }
}

function spec(
  name: string,
  subjects: string[],
  kind: TallyStreamKind,
  limits: StreamLimits,
): StreamSpec & {
  readonly kind: TallyStreamKind;
} {
  const { storage, replicas, duplicateWindowMs, maxMsgSizeBytes } = limits;
  return { name, subjects, kind, storage, replicas, duplicateWindowMs, maxMsgSizeBytes, ...policyOf(kind, limits) };
}

export type TallyStreamSpec = ReturnType<typeof spec>;

/** The seven Tally streams, each with its kind's policy. */
export function tallyStreamSpecs(names: TallyNames, limits: StreamLimits): TallyStreamSpec[] {
  assertLimits(limits);
  return [
    spec(names.budgetEventsStream, [names.budgetEventsWildcard], 'budgetEvents', limits),
    spec(names.workEventsStream, [names.workEventsWildcard], 'workEvents', limits),
    spec(names.directoryEventsStream, [names.directoryEventsWildcard], 'directoryEvents', limits),
    spec(names.workOutputStream, [names.workOutputWildcard], 'workOutput', limits),
    spec(names.workQueueStream, [names.workQueueSubject], 'workQueue', limits),
    spec(names.commandsStream, [`${names.namespace}.cmd.>`], 'commands', limits),
    spec(names.deadLetterStream, [names.deadLetterWildcard], 'deadLetter', limits),
  ];
}

export interface ProvisionedStream {
  readonly name: string;
  readonly outcome: 'created' | 'verified';
}

/**
 * Creates missing streams and verifies existing ones. Every stream is checked before
 * any is created, so a conflict leaves the server as it was found.
 */
export async function provisionTallyStreams(
  jsm: JetStreamManager,
  names: TallyNames,
  limits: StreamLimits,
): Promise<ProvisionedStream[]> {
  const specs = tallyStreamSpecs(names, limits);
  for (const s of specs) {
    const conflicts = await inspectStream(jsm, s);
    if (conflicts !== undefined && conflicts.length > 0) throw new StreamConfigConflict(s.name, conflicts);
  }
  const out: ProvisionedStream[] = [];
  // ensureStream checks again, so a stream changed by someone else in between is still refused.
  for (const s of specs) out.push({ name: s.name, outcome: await ensureStream(jsm, s) });
  return out;
}

export interface ReplyBucketLimits {
  /** How long a command's reply is remembered: a retry within it gets the same answer. */
  readonly ttlMs: number;
  readonly replicas: number;
  readonly maxBytes: number;
  /** Largest stored reply; defaults to REPLY_VALUE_SIZE_MAX_BYTES. */
  readonly maxValueSizeBytes?: number;
}

export const REPLY_VALUE_SIZE_MAX_BYTES = 64 * 1024;

/** The stream behind a KV bucket, as the server names it. */
export function kvStreamName(bucket: string): string {
  return `KV_${bucket}`;
}

/** A KV bucket Tally relies on, with every limit explicit (history is always 1: the latest value). */
export interface KvBucketSpec {
  readonly bucket: string;
  readonly ttlMs: number;
  readonly replicas: number;
  readonly maxBytes: number;
  readonly maxValueSizeBytes: number;
}

/** The command-reply cache's bucket. */
export function replyBucketSpec(names: TallyNames, limits: ReplyBucketLimits): KvBucketSpec {
  const maxValueSizeBytes = limits.maxValueSizeBytes ?? REPLY_VALUE_SIZE_MAX_BYTES;
  if (!(limits.ttlMs > 0) || !(limits.maxBytes > 0) || !(maxValueSizeBytes > 0) || !(limits.replicas >= 1)) {
    throw new Error(`invalid reply bucket limits: ${JSON.stringify(limits)}`);
  }
  return { bucket: names.commandRepliesBucket, ...limits, maxValueSizeBytes };
}

/** Reads the bucket's backing stream: undefined when it does not exist, else one line per difference. */
export async function inspectKvBucket(jsm: JetStreamManager, spec: KvBucketSpec): Promise<string[] | undefined> {
  const existing = await streamConfigOrUndefined(jsm, kvStreamName(spec.bucket));
  return existing && kvBucketConflicts(existing, spec);
}

/**
 * Creates or opens a bucket. Kvm.create silently opens an existing bucket whatever its
 * settings, so the backing stream is verified here first; an existing one is only read.
 */
export async function ensureKvBucket(js: JetStreamClient, spec: KvBucketSpec): Promise<KV> {
  const jsm = await js.jetstreamManager();
  const conflicts = await inspectKvBucket(jsm, spec);
  if (conflicts && conflicts.length > 0) throw new StreamConfigConflict(kvStreamName(spec.bucket), conflicts);
  return new Kvm(js).create(spec.bucket, {
    history: 1,
    ttl: spec.ttlMs,
    replicas: spec.replicas,
    max_bytes: spec.maxBytes,
    maxValueSize: spec.maxValueSizeBytes,
    storage: StorageType.File,
  });
}

/** Creates or opens the command-reply cache, verifying an existing one's limits. */
export async function ensureReplyBucket(
  js: JetStreamClient,
  names: TallyNames,
  limits: ReplyBucketLimits,
): Promise<KV> {
  return ensureKvBucket(js, replyBucketSpec(names, limits));
}

function kvBucketConflicts(actual: StreamConfig, spec: KvBucketSpec): string[] {
  const wanted: Record<string, unknown> = {
    max_age: spec.ttlMs * NS_PER_MS,
    num_replicas: spec.replicas,
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxValueSizeBytes,
    max_msgs_per_subject: 1,
    storage: StorageType.File,
  };
  const conflicts: string[] = [];
  for (const [key, value] of Object.entries(wanted)) {
    const have = (actual as unknown as Record<string, unknown>)[key];
    if (have !== value) conflicts.push(`${key} is ${String(have)}, expected ${String(value)}`);
  }
  return conflicts;
}

async function streamConfigOrUndefined(jsm: JetStreamManager, name: string): Promise<StreamConfig | undefined> {
  try {
    return (await jsm.streams.info(name)).config;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return undefined;
    throw error;
  }
}
