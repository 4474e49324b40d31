// The reply cache: a JetStream KV bucket holding the final reply to each command id.
// It is what makes a repeated command get the original answer without running its
// handler again, and what lets a caller whose reply was lost (or went to another
// caller's inbox) find the answer. TTL and size limits are explicit.
import { StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { replyCacheKey } from './wire.js';

const NS_PER_MS = 1_000_000;

export interface ReplyCacheSpec {
  readonly bucket: string;
  /** How long a reply is kept; at least the commands stream's duplicate window. */
  readonly ttlMs: number;
  readonly replicas: number;
  readonly storage: 'file' | 'memory';
  readonly maxBytes: number;
  readonly maxValueSizeBytes: number;
}

export class ReplyCache {
  private constructor(private readonly kv: KV) {}

  /** Creates the bucket, or verifies that the existing one has the configured limits. */
  static async ensure(js: JetStreamClient, jsm: JetStreamManager, spec: ReplyCacheSpec): Promise<ReplyCache> {
    const kv = await new Kvm(js).create(spec.bucket, {
      ttl: spec.ttlMs,
      history: 1,
      replicas: spec.replicas,
      storage: spec.storage === 'file' ? StorageType.File : StorageType.Memory,
      max_bytes: spec.maxBytes,
      maxValueSize: spec.maxValueSizeBytes,
    });
    // Kvm.create opens an existing bucket without comparing settings; Tally refuses a drifted one.
    const { config } = await jsm.streams.info(`KV_${spec.bucket}`);
    const conflicts: string[] = [];
    if (config.max_age !== spec.ttlMs * NS_PER_MS) conflicts.push(`max_age is ${config.max_age}, expected ${spec.ttlMs * NS_PER_MS}`);
    if (config.num_replicas !== spec.replicas) conflicts.push(`num_replicas is ${config.num_replicas}, expected ${spec.replicas}`);
    if (config.max_bytes !== spec.maxBytes) conflicts.push(`max_bytes is ${config.max_bytes}, expected ${spec.maxBytes}`);
    if (config.max_msg_size !== spec.maxValueSizeBytes) conflicts.push(`max_msg_size is ${config.max_msg_size}, expected ${spec.maxValueSizeBytes}`);
    if (config.storage !== (spec.storage === 'file' ? StorageType.File : StorageType.Memory)) conflicts.push(`storage is ${config.storage}, expected ${spec.storage}`);
    if (conflicts.length > 0) throw new Error(`reply cache bucket ${spec.bucket} is misconfigured: ${conflicts.join('; ')}`);
    return new ReplyCache(kv);
  }

  /** Binds to a bucket the server side created; the caller never creates it. */
  static async open(js: JetStreamClient, bucket: string, timeoutMs: number): Promise<ReplyCache> {
    return new ReplyCache(await new Kvm(js).open(bucket, { bindOnly: true, allow_direct: true, timeout: timeoutMs }));
  }

  async get(commandId: string): Promise<Uint8Array | undefined> {
    const entry = await this.kv.get(replyCacheKey(commandId));
    return entry && entry.operation === 'PUT' ? entry.value : undefined;
  }

  async put(commandId: string, reply: Uint8Array): Promise<void> {
    await this.kv.put(replyCacheKey(commandId), reply);
  }
}
