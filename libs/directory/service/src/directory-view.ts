// This replica's live view of the directory: an ordered consumer folds the directory stream
// into memory, so a key deleted through any replica is refused here as soon as its event is
// delivered. The view also knows how fresh it is: when it cannot confirm it has reached the
// stream's end within `staleAfterMs`, it refuses operator keys (fail closed) instead of
// trusting a view that may be missing a deletion. A read that finds nothing first lets the
// view catch up with what the stream held when the read arrived (ADR 0048), so a tenant or
// key created through another replica is found here at once.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { OperatorKeyLookup, StoredOperatorKey } from '@tally/platform-auth';
import {
  TENANT_ID_PATTERN,
  type OperatorKeyRecord,
  type SigningKeyRecord,
  type TenantState,
} from '@tally/directory-domain';
import { StreamEnd, subjectLastSequence } from '@tally/platform-jetstream';
import { EventBatchReader } from '@tally/platform-typeorm';
import { directoryEventRegistry } from './directory-events.dtos.js';
import { applyDirectoryEvent, emptyDirectory, toDirectoryEvent, type DirectoryState } from './directory-state.js';

export interface DirectoryViewOptions {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly stream: string;
  readonly filterSubject: string;
  /** The subject of a tenant's events (its keys among them). */
  readonly tenantSubject: (tenantId: string) => string;
  /** How long a read that found nothing waits for the view to catch up before it answers so. */
  readonly readWaitMs: number;
  /** How long the view may go without confirming it is current before keys are refused. */
  readonly staleAfterMs: number;
  /** How often an idle view asks the server for the stream's last sequence. */
  readonly freshnessCheckMs: number;
  /** Longest wait for the first catch-up at start. */
  readonly startTimeoutMs: number;
  readonly restartDelayMs: number;
  readonly nowMs: () => number;
  readonly onError: (error: unknown) => void;
}

export class DirectoryView implements OperatorKeyLookup {
  private state: DirectoryState = emptyDirectory();
  private lastSequence = 0;
  private confirmedAtMs = Number.NEGATIVE_INFINITY;
  private stopped = false;
  private stopSignal!: () => void;
  private readonly stopping = new Promise<void>((resolve) => (this.stopSignal = resolve));
  private readonly waiters = new Set<{ sequence: number; resolve: () => void }>();
  private loop: Promise<void> | undefined;
  private checker: NodeJS.Timeout | undefined;
  private readonly streamEnd: StreamEnd;

  constructor(private readonly options: DirectoryViewOptions) {
    this.streamEnd = new StreamEnd(options.jsm, options.stream);
  }

  /** Reads the stream to its end, then keeps following it. */
  async start(): Promise<void> {
    const target = await this.streamLastSequence();
    this.loop = this.follow();
    this.checker = setInterval(() => void this.confirmFreshness(), this.options.freshnessCheckMs);
    this.checker.unref();
    await this.waitFor(target, this.options.startTimeoutMs);
    this.confirmedAtMs = this.options.nowMs();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal();
    if (this.checker) clearInterval(this.checker);
    await this.loop;
  }

  /** Resolves once the view has applied `sequence`; throws after `timeoutMs`. */
  async waitFor(sequence: number, timeoutMs: number): Promise<void> {
    if (this.lastSequence >= sequence) return;
    await new Promise<void>((resolve, reject) => {
      const waiter = { sequence, resolve: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`the directory view did not reach sequence ${sequence} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /**
   * Read-your-writes for a tenant read that found nothing, or a listing of its keys: waits,
   * bounded, until the view has applied the tenant subject's last event. A subject with no
   * message (a tenant never written) waits for nothing. False when the bound ran out or the
   * server could not be asked: the caller then answers with what the view has.
   */
  async awaitTenant(tenantId: string): Promise<boolean> {
    if (!TENANT_ID_PATTERN.test(tenantId)) return true;
    const subject = this.options.tenantSubject(tenantId);
    return this.reach(() => subjectLastSequence(this.options.jsm, this.options.stream, subject));
  }

  /** The same for a read that cannot name a tenant (an unknown key): waits for the stream's end as of now. */
  async awaitCurrent(): Promise<boolean> {
    return this.reach(() => this.streamEnd.afterNow());
  }

  private async reach(position: () => Promise<number>): Promise<boolean> {
    try {
      const sequence = await position();
      if (sequence > this.lastSequence) await this.waitFor(sequence, this.options.readWaitMs);
      return true;
    } catch (error) {
      this.options.onError(error);
      return false;
    }
  }

  get fresh(): boolean {
    return this.options.nowMs() - this.confirmedAtMs <= this.options.staleAfterMs;
  }

  lookup(keyId: string): StoredOperatorKey | undefined | 'unavailable' {
    if (!this.fresh) return 'unavailable';
    const key = this.state.keys.get(keyId);
    return key === undefined ? undefined : storedKey(key);
  }

  tenant(tenantId: string): TenantState | undefined {
    const tenant = this.state.tenants.get(tenantId);
    return tenant?.created ? tenant : undefined;
  }

  /** The tenant; on a miss, as the view has it once caught up with the tenant's subject (ADR 0048). */
  async knownTenant(tenantId: string): Promise<TenantState | undefined> {
    const known = this.tenant(tenantId);
    if (known) return known;
    await this.awaitTenant(tenantId);
    return this.tenant(tenantId);
  }

  tenants(): TenantState[] {
    return [...this.state.tenants.values()].filter((t) => t.created);
  }

  signingKey(keyId: string): SigningKeyRecord | undefined {
    return this.state.signing.keys.get(keyId);
  }

  signingKeys(): SigningKeyRecord[] {
    return [...this.state.signing.keys.values()];
  }

  get activeSigningKeyId(): string | undefined {
    return this.state.signing.active_key_id;
  }

  get sequence(): number {
    return this.lastSequence;
  }

  private async follow(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.readFrom(this.lastSequence + 1);
      } catch (error) {
        if (this.stopped) return;
        this.options.onError(error);
        await Promise.race([this.stopping, new Promise((r) => setTimeout(r, this.options.restartDelayMs))]);
      }
    }
  }

  private async readFrom(startSequence: number): Promise<void> {
    const reader = await EventBatchReader.open(this.options.js, {
      stream: this.options.stream,
      filterSubject: this.options.filterSubject,
      startSequence,
      registry: directoryEventRegistry(),
      prefetchMessagesMax: 256,
      idleHeartbeatMs: 1_000,
      pullExpiresMs: 5_000,
    });
    try {
      while (!this.stopped) {
        const batch = await reader.read({
          limit: 256,
          batchWaitMs: 0,
          firstWaitMs: 1_000,
          stop: this.stopping,
          stopAtEnd: true,
        });
        for (const stored of batch) {
          applyDirectoryEvent(this.state, toDirectoryEvent(stored));
          this.lastSequence = stored.sequence;
        }
        if (batch.length > 0 && reader.reachedEnd) this.confirmedAtMs = this.options.nowMs();
        this.wake();
      }
    } finally {
      await reader.close();
    }
  }

  /** An idle view is current when the stream has nothing past what it applied. */
  private async confirmFreshness(): Promise<void> {
    const askedAtMs = this.options.nowMs();
    try {
      if ((await this.streamLastSequence()) <= this.lastSequence) this.confirmedAtMs = askedAtMs;
    } catch (error) {
      this.options.onError(error);
    }
  }

  private async streamLastSequence(): Promise<number> {
    const info = await this.options.jsm.streams.info(this.options.stream);
    return info.state.last_seq;
  }

  private wake(): void {
    for (const waiter of this.waiters) {
      if (this.lastSequence < waiter.sequence) continue;
      this.waiters.delete(waiter);
      waiter.resolve();
    }
  }
}

function storedKey(key: OperatorKeyRecord): StoredOperatorKey {
  return {
    key_id: key.key_id,
    tenant_id: key.tenant_id,
    role: key.role,
    key_hash: key.key_hash,
    ...(key.expires_at_ms === undefined ? {} : { expires_at_ms: key.expires_at_ms }),
    deleted: key.deleted_at_ms !== undefined,
  };
}
