// Only one replica of a service may run its projections at a time: two runners would
// race on the same checkpoint. Leadership is a lease in a NATS KV bucket whose max age
// is the lease TTL: the leader renews its key with a revision check; when it dies, the
// key ages out and a standby's create succeeds. This works the same over SQLite and
// PostgreSQL because the lock lives in NATS, next to the streams.
import type { KV } from '@nats-io/kv';
import type { JetStreamClient } from '@nats-io/jetstream';
import { ensureKvBucket, type KvBucketSpec } from '@tally/platform-jetstream';

/** The leases bucket: one small value per lease, which ages out after the lease TTL. */
export function leaseBucketSpec(bucket: string, ttlMs: number, replicas: number): KvBucketSpec {
  return { bucket, ttlMs, replicas, maxBytes: 1_048_576, maxValueSizeBytes: 1_024 };
}

export interface LeaseOptions {
  readonly js: JetStreamClient;
  readonly bucket: string;
  readonly key: string;
  readonly holderId: string;
  readonly ttlMs: number;
  readonly replicas: number;
}

export class ProjectionLease {
  private revision = 0;
  private constructor(
    private readonly kv: KV,
    private readonly options: LeaseOptions,
  ) {}

  static async open(options: LeaseOptions): Promise<ProjectionLease> {
    if (!(options.ttlMs >= 1_000)) throw new Error('lease ttlMs must be at least 1000');
    const kv = await ensureKvBucket(options.js, leaseBucketSpec(options.bucket, options.ttlMs, options.replicas));
    return new ProjectionLease(kv, options);
  }

  get held(): boolean {
    return this.revision > 0;
  }

  /** Takes the lease if free (or renews it if held). Returns whether this holder now has it. */
  async tryAcquire(): Promise<boolean> {
    try {
      this.revision = this.held
        ? await this.kv.update(this.options.key, this.options.holderId, this.revision)
        : await this.take();
      return true;
    } catch {
      // Someone else holds it, or our renewal lost a race: either way we are not the leader.
      this.revision = 0;
      return false;
    }
  }

  /**
   * Creates the key; or, when it already names this holder (a projection thread of this
   * same process that died and was restarted), takes it back at its revision instead of
   * waiting for it to age out. Holder ids are unique per process.
   */
  private async take(): Promise<number> {
    const current = await this.kv.get(this.options.key);
    if (current && current.operation === 'PUT' && current.string() === this.options.holderId)
      return this.kv.update(this.options.key, this.options.holderId, current.revision);
    return this.kv.create(this.options.key, this.options.holderId);
  }

  async release(): Promise<void> {
    if (!this.held) return;
    const revision = this.revision;
    this.revision = 0;
    await this.kv.delete(this.options.key, { previousSeq: revision }).catch(() => undefined);
  }
}
