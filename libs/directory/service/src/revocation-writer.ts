// The authority's side of the revocations bucket (ADR 0049): one entry per revoked capability,
// put under its id. A put of the same record again is harmless (the bucket keeps one entry a
// key), so the revoke handler and the ledger relay may both write it.
import type { JetStreamClient } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { encodeRevocation, isRevocationKey, type RevocationRecord } from '@tally/contracts';

/** Puts in flight at once: a revocation of a large tree writes its descendants in rounds of this many. */
const PUTS_IN_FLIGHT_MAX = 64;

export class RevocationWriter {
  private constructor(
    private readonly kv: KV,
    private readonly timeoutMs: number,
  ) {}

  /** Provisioned by `tally provision` (or at boot with nats.provision: auto); bound here, never created. */
  static async open(js: JetStreamClient, bucket: string, timeoutMs: number): Promise<RevocationWriter> {
    const kv = await new Kvm(js).open(bucket, { bindOnly: true, timeout: timeoutMs });
    return new RevocationWriter(kv, timeoutMs);
  }

  /** Resolves once every record is in the bucket; rejects when one could not be written in time. */
  async write(records: readonly RevocationRecord[]): Promise<void> {
    const writable = records.filter((r) => isRevocationKey(r.capability_id));
    for (let i = 0; i < writable.length; i += PUTS_IN_FLIGHT_MAX)
      await Promise.all(writable.slice(i, i + PUTS_IN_FLIGHT_MAX).map((r) => this.put(r)));
  }

  private async put(record: RevocationRecord): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`revocation not written within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      await Promise.race([this.kv.put(record.capability_id, encodeRevocation(record)), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
