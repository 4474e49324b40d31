// The streams and the command-reply bucket every Tally service relies on, derived from
// TallyNames with every limit passed in explicitly. Both services call
// provisionTallyStreams at start-up: the first creates, the rest verify, and a stream
// that exists with different settings stops the process (StreamConfigConflict).
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
  /** 0 keeps messages until they are acked (work queues) or forever (event streams). */
  readonly maxAgeMs: number;
  /** -1 means unlimited; a positive value discards the oldest messages once reached. */
  readonly maxBytes: number;
  readonly maxMsgSizeBytes: number;
}

export type TallyStreamKind = 'budgetEvents' | 'workEvents' | 'workQueue' | 'commands' | 'deadLetter';

/** One set of limits for every stream, or one per stream kind. */
export type TallyStreamLimits = StreamLimits | Readonly<Record<TallyStreamKind, StreamLimits>>;

function limitsFor(limits: TallyStreamLimits, kind: TallyStreamKind): StreamLimits {
  const chosen = 'storage' in limits ? limits : (limits as Readonly<Record<TallyStreamKind, StreamLimits>>)[kind];
  assertLimits(chosen, kind);
  return chosen;
}

/** Bad limits are a configuration bug: refuse them before they reach the server. */
function assertLimits(limits: StreamLimits, kind: string): void {
  const bad: string[] = [];
  if (!Number.isInteger(limits.replicas) || limits.replicas < 1 || limits.replicas > 5)
    bad.push(`replicas=${limits.replicas} must be 1..5`);
  if (!(limits.duplicateWindowMs > 0)) bad.push(`duplicateWindowMs=${limits.duplicateWindowMs} must be > 0`);
  if (!(limits.maxAgeMs >= 0)) bad.push(`maxAgeMs=${limits.maxAgeMs} must be >= 0`);
  // The server clamps the duplicate window to max_age; the stored value would then never match ours.
  if (limits.maxAgeMs > 0 && limits.duplicateWindowMs > limits.maxAgeMs)
    bad.push(`duplicateWindowMs=${limits.duplicateWindowMs} exceeds maxAgeMs=${limits.maxAgeMs}`);
  if (!(limits.maxBytes === -1 || limits.maxBytes > 0)) bad.push(`maxBytes=${limits.maxBytes} must be -1 or > 0`);
  if (!(limits.maxMsgSizeBytes > 0)) bad.push(`maxMsgSizeBytes=${limits.maxMsgSizeBytes} must be > 0`);
  if (bad.length > 0) throw new Error(`invalid ${kind} stream limits: ${bad.join('; ')}`);
}

function spec(
  name: string,
  subjects: string[],
  retention: StreamSpec['retention'],
  limits: StreamLimits,
  deny: boolean,
): StreamSpec {
  return { name, subjects, retention, ...limits, denyDelete: deny, denyPurge: deny };
}

/**
 * The five Tally streams. Event streams are the source of truth, so their messages can
 * be neither deleted nor purged; queues and the dead-letter stream are operational and
 * stay manageable.
 */
export function tallyStreamSpecs(names: TallyNames, limits: TallyStreamLimits): StreamSpec[] {
  return [
    spec(names.budgetEventsStream, [names.budgetEventsWildcard], 'limits', limitsFor(limits, 'budgetEvents'), true),
    spec(names.workEventsStream, [names.workEventsWildcard], 'limits', limitsFor(limits, 'workEvents'), true),
    spec(names.workQueueStream, [names.workQueueSubject], 'workqueue', limitsFor(limits, 'workQueue'), false),
    spec(names.commandsStream, [`${names.namespace}.cmd.>`], 'workqueue', limitsFor(limits, 'commands'), false),
    spec(names.deadLetterStream, [names.deadLetterWildcard], 'limits', limitsFor(limits, 'deadLetter'), false),
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
  limits: TallyStreamLimits,
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

/**
 * Creates or opens the command-reply cache. Kvm.create silently opens an existing
 * bucket whatever its settings, so the backing stream is verified here first.
 */
export async function ensureReplyBucket(
  js: JetStreamClient,
  names: TallyNames,
  limits: ReplyBucketLimits,
): Promise<KV> {
  const maxValueSizeBytes = limits.maxValueSizeBytes ?? REPLY_VALUE_SIZE_MAX_BYTES;
  if (!(limits.ttlMs > 0) || !(limits.maxBytes > 0) || !(maxValueSizeBytes > 0) || !(limits.replicas >= 1)) {
    throw new Error(`invalid reply bucket limits: ${JSON.stringify(limits)}`);
  }
  const jsm = await js.jetstreamManager();
  const stream = kvStreamName(names.commandRepliesBucket);
  const existing = await streamConfigOrUndefined(jsm, stream);
  if (existing) {
    const conflicts = replyBucketConflicts(existing, limits, maxValueSizeBytes);
    if (conflicts.length > 0) throw new StreamConfigConflict(stream, conflicts);
  }
  return new Kvm(js).create(names.commandRepliesBucket, {
    history: 1,
    ttl: limits.ttlMs,
    replicas: limits.replicas,
    max_bytes: limits.maxBytes,
    maxValueSize: maxValueSizeBytes,
    storage: StorageType.File,
  });
}

function replyBucketConflicts(actual: StreamConfig, limits: ReplyBucketLimits, maxValueSizeBytes: number): string[] {
  const wanted: Record<string, unknown> = {
    max_age: limits.ttlMs * NS_PER_MS,
    num_replicas: limits.replicas,
    max_bytes: limits.maxBytes,
    max_msg_size: maxValueSizeBytes,
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
