// The reply cache: a JetStream KV bucket holding the final reply to each command id.
// It is what makes a repeated command get the original answer without running its
// handler again, and what lets a caller whose reply was lost (or went to another
// caller's inbox) find the answer. TTL and size limits are explicit.
import type { JetStreamClient } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { CommandService, TallyNames } from '@tally/contracts';
import { ensureReplyBucket, type ReplyBucketLimits } from '@tally/platform-jetstream';
import { replyCacheKey } from './wire.js';

export class ReplyCache {
  private constructor(private readonly kv: KV) {}

  /** The answering service's own bucket: created, or verified to have the configured limits. */
  static async ensure(
    js: JetStreamClient,
    names: TallyNames,
    service: CommandService,
    limits: ReplyBucketLimits,
  ): Promise<ReplyCache> {
    return new ReplyCache(await ensureReplyBucket(js, names, service, limits));
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
