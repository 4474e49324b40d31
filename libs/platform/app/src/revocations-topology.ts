// Where revocations travel (ADR 0049): the bucket every replica of both services follows, and
// the authority's relay, one durable consumer of the budget events shared by its replicas,
// which writes every `CapabilityRevoked` of the ledger into the bucket, so a write lost to a
// crash after the revocation committed is made by whichever replica reads the commit next.
import { CAPABILITY_TTL_SECONDS_MAX, type TallyNames } from '@tally/contracts';
import type { ConsumerSpec, KvBucketSpec } from '@tally/platform-jetstream';
import type { TallyConfig } from './config.schema.js';

/** The relay's durable consumer on the budget events stream. */
export const REVOCATION_RELAY_CONSUMER = 'revocation-relay';
/** A commit whose write keeps failing is retried this many times, then kept in the dead-letter stream. */
export const REVOCATION_RELAY_DELIVERIES_MAX = 100;

/**
 * The bucket's settings. An entry lives as long as the longest token it can name: a token
 * expires at most CAPABILITY_TTL_SECONDS_MAX after it was issued, so at most that long after
 * it was revoked; past it the token is refused as expired anyway.
 */
export function revocationsBucketSpec(names: TallyNames, replicas: number): KvBucketSpec {
  return {
    bucket: names.revocationsBucket,
    ttlMs: CAPABILITY_TTL_SECONDS_MAX * 1000,
    replicas,
    // An entry is about 200 bytes: a year of a million revocations fits several times over.
    maxBytes: 1024 * 1024 * 1024,
    maxValueSizeBytes: 2_048,
  };
}

/** Headers only: the relay fetches the body of the rare commit whose headers name a revocation. */
export function revocationRelayConsumerSpec(config: TallyConfig, names: TallyNames): ConsumerSpec {
  return {
    stream: names.budgetEventsStream,
    durable: REVOCATION_RELAY_CONSUMER,
    filterSubject: names.budgetEventsWildcard,
    ackWaitMs: config.consumers.ack_wait_ms,
    deliveriesMax: REVOCATION_RELAY_DELIVERIES_MAX + 1,
    ackPendingMax: config.consumers.ack_pending_max,
    headersOnly: true,
  };
}
