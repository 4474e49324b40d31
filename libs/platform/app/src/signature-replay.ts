// The replay ledger of subject signatures (ADR 0011) shared by every replica of a service:
// one NATS KV bucket per service (ADR 0051) whose entries live as long as a signature's
// window (the bucket's max age), written with create-if-absent, so a signature spent at one
// replica is refused at every other one. Each service has its own because a signature covers
// `@path`, a route only that service serves, and no service may write another's. A
// process-local memory in front answers a replay at the same replica without a round trip
// and bounds what one replica keeps.
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { CommandService, TallyNames } from '@tally/contracts';
import type { KvBucketSpec } from '@tally/platform-jetstream';
import {
  LayeredReplayLedger,
  MemoryReplayLedger,
  signatureWindowMs,
  SubjectSignatures,
  type ReplayLedger,
} from '@tally/platform-auth';
import { SIGNATURE_SKEW_SECONDS_MAX, type TallyConfig } from './config.schema.js';
import type { NatsRuntime } from './nats-runtime.js';

const EMPTY = new Uint8Array(0);

/**
 * The bucket's settings. Its max age is the longest window any allowed skew needs (300 s
 * either way, plus a second), not the configured one, so changing the skew never makes the
 * provisioned bucket differ from its spec, and no acceptable signature is forgotten early.
 */
export function signatureReplayBucketSpec(names: TallyNames, service: CommandService, replicas: number): KvBucketSpec {
  return {
    bucket: names.signatureReplayBucket(service),
    ttlMs: signatureWindowMs(SIGNATURE_SKEW_SECONDS_MAX),
    replicas,
    // A key is 43 characters and the value empty: at ~130 bytes a record this holds ~2 million
    // signatures in a window; when full, creates fail and signed requests get 503 (fail closed).
    maxBytes: 256 * 1024 * 1024,
    // The server counts the headers (the expected-sequence check) in the message size.
    maxValueSizeBytes: 1_024,
  };
}

export class KvReplayLedger implements ReplayLedger {
  private constructor(
    private readonly kv: KV,
    private readonly timeoutMs: number,
  ) {}

  /** Provisioned by `tally provision` (or at boot with nats.provision: auto); bound here, never created. */
  static async open(js: JetStreamClient, bucket: string, timeoutMs: number): Promise<KvReplayLedger> {
    const kv = await new Kvm(js).open(bucket, { bindOnly: true, allow_direct: true, timeout: timeoutMs });
    return new KvReplayLedger(kv, timeoutMs);
  }

  async firstUse(id: string): Promise<boolean | 'unavailable'> {
    try {
      await withTimeout(this.kv.create(id, EMPTY), this.timeoutMs);
      return true;
    } catch (error) {
      const code = error instanceof JetStreamApiError ? error.code : undefined;
      if (
        code === JetStreamApiCodes.StreamWrongLastSequence ||
        code === JetStreamApiCodes.StreamWrongLastSequenceUnknown
      )
        return false;
      // Cannot tell whether another replica saw it: refuse rather than risk a replay.
      return 'unavailable';
    }
  }
}

/** The verifier a service's guards use: the skew from config, replays refused across its replicas. */
export async function openSubjectSignatures(
  config: TallyConfig,
  nats: NatsRuntime,
  service: CommandService,
): Promise<SubjectSignatures> {
  const skewSeconds = config.auth.signature_skew_seconds;
  const bucket = nats.names.signatureReplayBucket(service);
  const shared = await KvReplayLedger.open(nats.js, bucket, config.nats.publish_timeout_ms);
  const local = new MemoryReplayLedger(config.auth.signature_replay_entries_max);
  return new SubjectSignatures({ skewSeconds, replay: new LayeredReplayLedger(local, shared) });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
