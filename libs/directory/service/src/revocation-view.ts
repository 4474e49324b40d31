// This replica's view of revoked capabilities (ADR 0049): an ordered consumer follows the
// revocations bucket from its first entry, so every replica of both services refuses a revoked
// token at the door, before an Admit or a work unit can reach the ledger. The authority notes
// its own revocations at once; every other replica hears of one within a delivery of its
// bucket write. The view is a cache of the ledger's `CapabilityRevoked` facts: while it lags,
// the ledger still refuses a revoked capability, with a receipt, as it always did.
import { DeliverPolicy, type ConsumerMessages, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { decodeRevocation, type RevocationRecord } from '@tally/contracts';
import { kvStreamName } from '@tally/platform-jetstream';

/** What the capability verifier asks of the view. */
export interface RevocationLookup {
  isRevoked(capabilityId: string): boolean;
}

export interface RevocationViewOptions {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly bucket: string;
  /** Longest wait for the first read to reach the bucket's end at start. */
  readonly startTimeoutMs: number;
  readonly restartDelayMs: number;
  /** A revocation older than this names only expired tokens: the view forgets it. */
  readonly retainMs: number;
  readonly nowMs: () => number;
  readonly onError: (error: unknown) => void;
}

/** Messages the client buffers ahead of the view. */
const PREFETCH_MESSAGES_MAX = 256;
const IDLE_HEARTBEAT_MS = 1_000;
const PULL_EXPIRES_MS = 5_000;

export class RevocationView implements RevocationLookup {
  /** Revoked capability ids and when; bounded by the bucket's own size limit. */
  private readonly revoked = new Map<string, number>();
  private readonly prefix: string;
  private readonly stream: string;
  private lastSequence = 0;
  private stopped = false;
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private readonly waiters = new Set<{ sequence: number; resolve: () => void }>();
  /** Told of each revocation as the view learns it, so what a token holds open can end at once. */
  private readonly listeners = new Set<(capabilityId: string) => void>();

  constructor(private readonly options: RevocationViewOptions) {
    this.prefix = `$KV.${options.bucket}.`;
    this.stream = kvStreamName(options.bucket);
  }

  /** Reads the bucket to its end, then keeps following it. */
  async start(): Promise<void> {
    const { state } = await this.options.jsm.streams.info(this.stream);
    // Entries age out oldest first, so the last sequence is a message unless none is left.
    const target = state.messages === 0 ? 0 : state.last_seq;
    this.loop = this.follow();
    await this.waitFor(target, this.options.startTimeoutMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    await this.loop;
  }

  get size(): number {
    return this.revoked.size;
  }

  get sequence(): number {
    return this.lastSequence;
  }

  isRevoked(capabilityId: string): boolean {
    const at = this.revoked.get(capabilityId);
    if (at === undefined) return false;
    if (at + this.options.retainMs >= this.options.nowMs()) return true;
    this.revoked.delete(capabilityId);
    return false;
  }

  /** The authority's own revocations, known here before the bucket delivers them back. */
  note(records: readonly RevocationRecord[]): void {
    for (const r of records) {
      this.revoked.set(r.capability_id, r.revoked_at_ms);
      this.tell(r.capability_id);
    }
  }

  /** Calls `listener` with each capability id the view learns is revoked; returns its removal. */
  onRevoked(listener: (capabilityId: string) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Resolves once the view has applied `sequence` of the bucket's stream; throws after `timeoutMs`. */
  async waitFor(sequence: number, timeoutMs: number): Promise<void> {
    if (this.lastSequence >= sequence) return;
    await new Promise<void>((resolve, reject) => {
      const waiter = { sequence, resolve: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`the revocation view did not reach sequence ${sequence} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  private async follow(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.readFrom(this.lastSequence + 1);
      } catch (error) {
        if (this.stopped) return;
        this.options.onError(error);
      }
      if (!this.stopped) await new Promise((r) => setTimeout(r, this.options.restartDelayMs));
    }
  }

  private async readFrom(startSequence: number): Promise<void> {
    const consumer = await this.options.js.consumers.get(this.stream, {
      filter_subjects: `${this.prefix}>`,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: startSequence,
    });
    const messages = await consumer.consume({
      max_messages: PREFETCH_MESSAGES_MAX,
      idle_heartbeat: IDLE_HEARTBEAT_MS,
      expires: PULL_EXPIRES_MS,
    });
    this.messages = messages;
    if (this.stopped) messages.stop();
    for await (const m of messages) {
      this.apply(m.subject.slice(this.prefix.length), m.headers?.get('KV-Operation'), m.data);
      this.lastSequence = m.seq;
      this.wake();
    }
  }

  /** An entry that does not decode is skipped: the ledger still refuses its capability. */
  private apply(key: string, operation: string | undefined, data: Uint8Array): void {
    if (operation === 'DEL' || operation === 'PURGE') {
      this.revoked.delete(key);
      return;
    }
    const record = decodeRevocation(key, data);
    if (!record) return;
    this.revoked.set(key, record.revoked_at_ms);
    this.tell(key);
  }

  /** A listener that throws is reported, never allowed to stop the view. */
  private tell(capabilityId: string): void {
    for (const listener of this.listeners) {
      try {
        listener(capabilityId);
      } catch (error) {
        this.options.onError(error);
      }
    }
  }

  private wake(): void {
    for (const waiter of this.waiters) {
      if (this.lastSequence < waiter.sequence) continue;
      this.waiters.delete(waiter);
      waiter.resolve();
    }
  }
}
