// Stripe-style idempotency keys (http-api.md, Credentials; ADR 0023). A caller's
// Idempotency-Key is remembered, per scope (the tenant, or the capability a possession proof
// names) and per endpoint, together with a fingerprint of the request and the command id the
// first request ran under. The same key and request run again under that command id, which
// the ledger dedupes, so they get the same answer; the same key with another request is a
// conflict. The records live in a JetStream KV bucket with a TTL, so every replica shares
// them and they outlive a restart; only hashes and a random command id are stored.
import { createHash, randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { TallyNames } from '@tally/contracts';
import type { KvBucketSpec } from './kv-buckets.js';

const WRONG_LAST_SEQUENCE = [10071, 10164];
/** A record is two hashes and a command id; anything larger is not ours. */
const RECORD_BYTES_MAX = 1024;
/** A record can expire between the failed create and the read; this many tries settle it. */
const CLAIM_ATTEMPTS_MAX = 4;

export interface IdempotencyBucketLimits {
  /** How long a key is remembered (24 h by default): past it, the key may be used for a new request. */
  readonly ttlMs: number;
  readonly replicas: number;
  readonly maxBytes: number;
}

/** The bucket `tally provision` creates (and a service in auto mode), with its TTL and byte limit. */
export function idempotencyBucketSpec(names: TallyNames, limits: IdempotencyBucketLimits): KvBucketSpec {
  if (!(limits.ttlMs > 0) || !(limits.maxBytes > 0) || !(limits.replicas >= 1))
    throw new Error(`invalid idempotency bucket limits: ${JSON.stringify(limits)}`);
  return { bucket: names.idempotencyBucket, ...limits, maxValueSizeBytes: RECORD_BYTES_MAX };
}

/** One use of a key: where it is scoped, on which endpoint, and what the request was. */
export interface IdempotentRequest {
  /** `tenant:<id>`, or `capability:<id>` / `hold:<id>` for a caller known only by a proof it holds. */
  readonly scope: string;
  /** The route, as `POST /v1/admissions`; path parameters belong in `fingerprint`. */
  readonly endpoint: string;
  readonly key: string;
  /** base64url SHA-256 of the request: its body, path parameters and who acts. */
  readonly fingerprint: string;
}

export type Claim = { readonly kind: 'fresh' | 'repeat'; readonly commandId: string } | { readonly kind: 'conflict' };

interface IdempotencyRecord {
  readonly fingerprint: string;
  readonly command_id: string;
  readonly at_ms: number;
}

export class IdempotencyRecords {
  constructor(
    private readonly kv: KV,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Binds to the bucket provisioning created. */
  static async open(js: JetStreamClient, names: TallyNames, timeoutMs: number): Promise<IdempotencyRecords> {
    return new IdempotencyRecords(
      await new Kvm(js).open(names.idempotencyBucket, { bindOnly: true, allow_direct: true, timeout: timeoutMs }),
    );
  }

  /**
   * The command id this request runs under: a new one for a key not seen in this scope and
   * endpoint, the first request's for the same request again, or a conflict. Concurrent first
   * uses race on an atomic create, so exactly one request's fingerprint is recorded.
   */
  async claim(request: IdempotentRequest): Promise<Claim> {
    const key = recordKey(request);
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS_MAX; attempt++) {
      const record: IdempotencyRecord = {
        fingerprint: request.fingerprint,
        command_id: `idem-${randomUUID()}`,
        at_ms: this.nowMs(),
      };
      try {
        await this.kv.create(key, JSON.stringify(record));
        return { kind: 'fresh', commandId: record.command_id };
      } catch (error) {
        if (!(error instanceof JetStreamApiError) || !WRONG_LAST_SEQUENCE.includes(error.code)) throw error;
      }
      const entry = await this.kv.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const first = JSON.parse(entry.string()) as IdempotencyRecord;
      return first.fingerprint === request.fingerprint
        ? { kind: 'repeat', commandId: first.command_id }
        : { kind: 'conflict' };
    }
    throw new Error(`idempotency record for ${request.endpoint} could not be claimed`);
  }
}

/** KV keys allow few characters, and a caller's key is arbitrary: the record is named by a hash. */
function recordKey(request: IdempotentRequest): string {
  return createHash('sha256').update(`${request.scope}\n${request.endpoint}\n${request.key}`).digest('hex');
}
