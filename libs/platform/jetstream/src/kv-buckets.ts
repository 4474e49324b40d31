// The KV buckets Tally keeps (command replies, leases, idempotency records, spent
// signatures), each a stream `KV_<bucket>` created here with every limit explicit. No bucket
// accepts a roll-up header, a purge or a message delete (ADR 0051): a `Nats-Rollup: all`
// publish would otherwise empty the bucket for whoever may write one key of it. Entries go
// by their TTL (the stream's max age) or by a delete marker, never by a purge. A bucket of
// an earlier release is moved to that in place; any other difference is refused, naming it.
import {
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { CommandService, TallyNames } from '@tally/contracts';
import { StreamConfigConflict } from './provisioning.js';

const NS_PER_MS = 1_000_000;
const STREAM_NOT_FOUND = 10059;
/** The server's default duplicate window, which it clamps to a shorter max age. */
const DUPLICATE_WINDOW_MAX_MS = 120_000;

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

/** The reply cache of the service that answers `service` commands; only that service writes it. */
export function replyBucketSpec(names: TallyNames, service: CommandService, limits: ReplyBucketLimits): KvBucketSpec {
  const maxValueSizeBytes = limits.maxValueSizeBytes ?? REPLY_VALUE_SIZE_MAX_BYTES;
  if (!(limits.ttlMs > 0) || !(limits.maxBytes > 0) || !(maxValueSizeBytes > 0) || !(limits.replicas >= 1)) {
    throw new Error(`invalid reply bucket limits: ${JSON.stringify(limits)}`);
  }
  return { bucket: names.commandRepliesBucket(service), ...limits, maxValueSizeBytes };
}

/** What no Tally bucket allows; an earlier release's bucket is moved to these in place (tightening loses nothing). */
const HARDENING = { allow_rollup_hdrs: false, deny_purge: true, deny_delete: true } as const;

/** The bucket's backing stream as Tally creates it: what nats.js would make, without roll-ups, purges or deletes. */
export function toKvStreamConfig(spec: KvBucketSpec): Partial<StreamConfig> & { name: string } {
  return {
    name: kvStreamName(spec.bucket),
    subjects: [`$KV.${spec.bucket}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: spec.replicas,
    max_msgs_per_subject: 1,
    max_msgs: -1,
    max_age: spec.ttlMs * NS_PER_MS,
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxValueSizeBytes,
    // A full bucket refuses new keys; it never drops live ones (a spent signature, a held lease).
    discard: DiscardPolicy.New,
    duplicate_window: Math.min(spec.ttlMs, DUPLICATE_WINDOW_MAX_MS) * NS_PER_MS,
    allow_direct: true,
    ...HARDENING,
  };
}

/** One line per setting Tally owns that differs: the limits, then the hardening. */
function kvBucketConflicts(actual: StreamConfig, spec: KvBucketSpec): { fixed: string[]; hardening: string[] } {
  const limits: Record<string, unknown> = {
    max_age: spec.ttlMs * NS_PER_MS,
    num_replicas: spec.replicas,
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxValueSizeBytes,
    max_msgs_per_subject: 1,
    storage: StorageType.File,
  };
  const have = actual as unknown as Record<string, unknown>;
  const differs = (wanted: Record<string, unknown>, normalise: (v: unknown) => unknown) =>
    Object.entries(wanted)
      .filter(([key, value]) => normalise(have[key]) !== value)
      .map(([key, value]) => `${key} is ${String(normalise(have[key]))}, expected ${String(value)}`);
  // The server leaves a false flag out of the config it reports.
  return { fixed: differs(limits, (v) => v), hardening: differs(HARDENING, (v) => v ?? false) };
}

/** Reads the bucket's backing stream: undefined when it does not exist, else one line per difference. */
export async function inspectKvBucket(jsm: JetStreamManager, spec: KvBucketSpec): Promise<string[] | undefined> {
  const existing = await streamConfigOrUndefined(jsm, kvStreamName(spec.bucket));
  if (existing === undefined) return undefined;
  const { fixed, hardening } = kvBucketConflicts(existing, spec);
  return [...fixed, ...hardening];
}

export interface KvBucketReconciled {
  readonly bucket: string;
  readonly outcome: 'created' | 'verified' | 'updated';
  /** One line per setting changed in place. */
  readonly changes: readonly string[];
}

/**
 * Creates the bucket, or moves an existing one to deny roll-ups, purges and message deletes
 * (what a bucket of an earlier release allowed), keeping every key. A bucket that already has
 * the spec is only read, so a service whose user may not manage streams passes here. Any
 * other difference (a TTL, a limit) is refused, naming it: `tally provision` never changes
 * what a service relies on behind its back.
 */
export async function reconcileKvBucket(jsm: JetStreamManager, spec: KvBucketSpec): Promise<KvBucketReconciled> {
  const name = kvStreamName(spec.bucket);
  const existing = await streamConfigOrUndefined(jsm, name);
  if (existing === undefined) {
    await jsm.streams.add(toKvStreamConfig(spec));
    return { bucket: spec.bucket, outcome: 'created', changes: [] };
  }
  const { fixed, hardening } = kvBucketConflicts(existing, spec);
  if (fixed.length > 0) throw new StreamConfigConflict(name, [...fixed, ...hardening]);
  if (hardening.length === 0) return { bucket: spec.bucket, outcome: 'verified', changes: [] };
  const { name: _name, ...config } = existing;
  await jsm.streams.update(name, { ...config, ...HARDENING });
  const left = await inspectKvBucket(jsm, spec);
  if (left === undefined || left.length > 0) throw new StreamConfigConflict(name, left ?? ['it disappeared']);
  return { bucket: spec.bucket, outcome: 'updated', changes: hardening };
}

/** Creates (or moves, see reconcileKvBucket) the bucket, then binds to it. */
export async function ensureKvBucket(js: JetStreamClient, spec: KvBucketSpec): Promise<KV> {
  await reconcileKvBucket(await js.jetstreamManager(), spec);
  return new Kvm(js).open(spec.bucket, { bindOnly: true, allow_direct: true });
}

/** Creates or opens the reply cache of `service`, verifying an existing one's limits. */
export async function ensureReplyBucket(
  js: JetStreamClient,
  names: TallyNames,
  service: CommandService,
  limits: ReplyBucketLimits,
): Promise<KV> {
  return ensureKvBucket(js, replyBucketSpec(names, service, limits));
}

async function streamConfigOrUndefined(jsm: JetStreamManager, name: string): Promise<StreamConfig | undefined> {
  try {
    return (await jsm.streams.info(name)).config;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return undefined;
    throw error;
  }
}
