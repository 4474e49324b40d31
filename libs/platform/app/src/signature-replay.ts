// The replay ledger of subject signatures (ADR 0011) shared by every replica of both
// services: one NATS KV bucket whose entries live as long as a signature's window (the
// bucket's max age), written with create-if-absent, so a signature spent at one replica
// is refused at every other one. A process-local memory in front answers a replay at the
// same replica without a round trip and bounds what one replica keeps.
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import {
  LayeredReplayLedger,
  MemoryReplayLedger,
  signatureWindowMs,
  SubjectSignatures,
  type ReplayLedger,
} from '@tally/platform-auth';
import type { TallyConfig } from './config.schema.js';
import type { NatsRuntime } from './nats-runtime.js';

const EMPTY = new Uint8Array(0);

export class KvReplayLedger implements ReplayLedger {
  private constructor(
    private readonly kv: KV,
    private readonly timeoutMs: number,
  ) {}

  static async open(js: JetStreamClient, bucket: string, windowMs: number, replicas: number, timeoutMs: number) {
    const kv = await new Kvm(js).create(bucket, {
      history: 1,
      ttl: windowMs,
      replicas,
      // A key is 43 characters and the value empty: 64 MiB holds far more than a window's signatures.
      max_bytes: 64 * 1024 * 1024,
      // The server counts the headers (the expected-sequence check) in the message size.
      maxValueSize: 1_024,
    });
    // Kvm.create opens an existing bucket whatever its settings: one made under a smaller skew
    // would forget signatures that are still acceptable, so its max age is raised to the window.
    const jsm = await js.jetstreamManager();
    const stream = `KV_${bucket}`;
    const { config } = await jsm.streams.info(stream);
    const windowNs = windowMs * 1_000_000;
    if (!(config.max_age >= windowNs)) await jsm.streams.update(stream, { max_age: windowNs });
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

/** The verifier both services' guards use: the skew from config, replays refused across replicas. */
export async function openSubjectSignatures(config: TallyConfig, nats: NatsRuntime): Promise<SubjectSignatures> {
  const skewSeconds = config.auth.signature_skew_seconds;
  const windowMs = signatureWindowMs(skewSeconds);
  const shared = await KvReplayLedger.open(
    nats.js,
    nats.names.signatureReplayBucket,
    windowMs,
    config.streams.replicas,
    config.nats.publish_timeout_ms,
  );
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
