// The ledger's revocations, relayed into the revocations bucket (ADR 0049): one durable
// consumer of the budget events, shared by every authority replica, reads each commit's
// headers only; a commit naming `CapabilityRevoked` is read whole, by direct get, and each
// capability it revoked is written to the bucket before the commit is acknowledged. The revoke
// handler writes the same records at once; the relay is what makes the bucket complete when
// that write was lost (a crash after the ledger commit, a bucket that did not answer).
import { AckPolicy, DeliverPolicy, JetStreamApiError, ReplayPolicy, type JsMsg } from '@nats-io/jetstream';
import { budgetEventRegistry, rootOfCapability } from '@tally/budget-application';
import { CAPABILITY_TTL_SECONDS_MAX, Headers, type RevocationRecord } from '@tally/contracts';
import type { RevocationView, RevocationWriter } from '@tally/directory-service';
import { REVOCATION_RELAY_CONSUMER, REVOCATION_RELAY_DELIVERIES_MAX, type HostContext } from '@tally/platform-app';
import { publishDeadLetter } from '@tally/platform-jetstream';
import { revocationRecords } from './revocation-notices.js';

const NS_PER_MS = 1_000_000;
const CONSUMER_NOT_FOUND = 10014;
const FETCH_BATCH = 512;
const FETCH_EXPIRES_MS = 5_000;
const FETCH_RETRY_DELAY_MS = 1_000;
const RETRY_DELAY_MS = 1_000;
const REVOKED = 'CapabilityRevoked';

/** Whether a commit's headers name a revocation; one without the headers (older) is read to be sure. */
function mayRevoke(msg: JsMsg): boolean {
  const many = msg.headers?.get(Headers.eventTypes);
  const one = msg.headers?.get(Headers.eventType);
  if (!many && !one) return true;
  return (many ? many.split(',') : [one!]).includes(REVOKED);
}

export interface RevocationRelayDeps {
  readonly ctx: HostContext;
  readonly writer: RevocationWriter;
  readonly view: RevocationView;
}

export class RevocationRelay {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private current: { close(): Promise<void | Error> } | undefined;
  private readonly registry = budgetEventRegistry();

  constructor(private readonly d: RevocationRelayDeps) {}

  async start(): Promise<this> {
    const { names } = this.d.ctx.nats;
    // With nats.provision: check an operator created the consumer; this user only pulls from it.
    if (this.d.ctx.config.nats.provision === 'auto') await this.ensureConsumer();
    const consumer = await this.d.ctx.nats.js.consumers.get(names.budgetEventsStream, REVOCATION_RELAY_CONSUMER);
    this.loop = this.run(consumer);
    return this;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.current?.close().catch(() => undefined);
    await this.loop;
  }

  private async ensureConsumer(): Promise<void> {
    const { jsm, names } = this.d.ctx.nats;
    try {
      await jsm.consumers.info(names.budgetEventsStream, REVOCATION_RELAY_CONSUMER);
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== CONSUMER_NOT_FOUND) throw error;
      await jsm.consumers.add(names.budgetEventsStream, {
        durable_name: REVOCATION_RELAY_CONSUMER,
        filter_subject: names.budgetEventsWildcard,
        ack_policy: AckPolicy.Explicit,
        ack_wait: this.d.ctx.config.consumers.ack_wait_ms * NS_PER_MS,
        max_deliver: REVOCATION_RELAY_DELIVERIES_MAX + 1,
        max_ack_pending: this.d.ctx.config.consumers.ack_pending_max,
        deliver_policy: DeliverPolicy.All,
        replay_policy: ReplayPolicy.Instant,
        headers_only: true,
      });
    }
  }

  private async run(consumer: Awaited<ReturnType<HostContext['nats']['js']['consumers']['get']>>): Promise<void> {
    while (!this.stopping) {
      try {
        const batch = await consumer.fetch({ max_messages: FETCH_BATCH, expires: FETCH_EXPIRES_MS });
        this.current = batch;
        const work: Promise<void>[] = [];
        for await (const msg of batch) {
          // Nothing to relay: a lost ack only brings the headers back, to be skipped again.
          if (!mayRevoke(msg)) msg.ack();
          else work.push(this.settle(msg));
        }
        await Promise.all(work);
      } catch (error) {
        if (this.stopping) break;
        this.d.ctx.logger.event('warn', 'revocation relay fetch failed; retrying', { error: String(error) });
        await new Promise((r) => setTimeout(r, FETCH_RETRY_DELAY_MS));
      } finally {
        this.current = undefined;
      }
    }
  }

  /** Ends the message with exactly one of ack, nak(delay) or term (after its dead letter). */
  private async settle(msg: JsMsg): Promise<void> {
    try {
      if (msg.info.deliveryCount > REVOCATION_RELAY_DELIVERIES_MAX)
        return await this.deadLetter(msg, 'writing the revocation kept failing');
      const records = await this.read(msg);
      if (records === undefined) return await this.deadLetter(msg, 'the commit does not decode');
      // Written even when this replica's view knows it: that may be the revoke handler's own
      // note of a write that failed. A second put of the same record changes nothing.
      await this.d.writer.write(records);
      this.d.view.note(records);
      await msg.ackAck({ timeout: this.d.ctx.config.nats.publish_timeout_ms }).catch(() => false);
    } catch (error) {
      this.d.ctx.logger.event('warn', 'revocation relay failed; retrying', { seq: msg.seq, error: String(error) });
      msg.nak(RETRY_DELAY_MS);
    }
  }

  /** The capabilities the commit revoked whose tokens may still be live; undefined when it does not decode. */
  private async read(msg: JsMsg): Promise<RevocationRecord[] | undefined> {
    const { jsm, names } = this.d.ctx.nats;
    const stored = await jsm.direct.getMessage(names.budgetEventsStream, { seq: msg.seq });
    if (!stored) throw new Error(`commit #${msg.seq} could not be read`);
    const decoded = this.registry.decodeCommit(stored.data);
    if (!decoded.ok) return undefined;
    const oldestLiveMs = Date.now() - CAPABILITY_TTL_SECONDS_MAX * 1000;
    return decoded.value
      .filter((e) => e.type === REVOKED)
      .flatMap((e) => {
        const p = e.payload as { capability_id: string; revoked_ids: string[]; at_ms: number };
        if (p.at_ms < oldestLiveMs) return [];
        return revocationRecords(rootOfCapability(p.capability_id), p.capability_id, p.revoked_ids, p.at_ms);
      });
  }

  private async deadLetter(msg: JsMsg, detail: string): Promise<void> {
    await publishDeadLetter(
      this.d.ctx.nats.js,
      this.d.ctx.nats.names,
      {
        source: 'revocation-relay',
        reason: 'handler_rejected',
        detail,
        originalSubject: msg.subject,
        originalStream: msg.info.stream,
        originalSequence: msg.seq,
        deliveries: msg.info.deliveryCount,
        data: new Uint8Array(),
      },
      this.d.ctx.config.nats.publish_timeout_ms,
    );
    msg.term();
  }
}
