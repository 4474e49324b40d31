// The server side of the simulated event store: one JetStream stream held in memory, with
// the semantics Tally relies on from nats-server. A publish is one message at the next
// stream sequence; a message id seen within the duplicate window is answered with the
// stored message's sequence, flagged duplicate, before any expectation is checked; the
// expected last subject sequence is checked next; a stream at its byte limit refuses the
// message (discard: new), storing nothing. The contract suite (test/event-store.contract.ts)
// runs the same cases against this and against a real nats-server.
import type { EventRegistry } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';

export interface SimStreamConfig {
  readonly name: string;
  /** The stream's byte budget (max_bytes); -1 is unlimited. */
  readonly maxBytes: number;
  /** The largest message the stream takes (max_msg_size), headers included. */
  readonly maxMsgSizeBytes: number;
  /** How long a message id is remembered for deduplication (duplicate_window). */
  readonly duplicateWindowMs: number;
}

/** One stored message: a commit of one or more events at one sequence. */
export interface SimMessage {
  readonly seq: number;
  readonly subject: string;
  readonly msgId: string;
  /** The subject's last sequence the publisher expected (the commit's predecessor). */
  readonly previous: number;
  /** What the message counts against max_bytes. */
  readonly storedBytes: number;
  readonly events: readonly StoredEvent[];
}

/** The server's answer to a publish; the adapter maps the refusals onto the EventStore port's errors. */
export type PublishAck =
  | { readonly kind: 'stored' | 'duplicate'; readonly seq: number }
  | { readonly kind: 'wrong_last_sequence'; readonly last: number }
  | { readonly kind: 'maximum_bytes_exceeded' };

/**
 * Per-message overhead nats-server's file store counts (record header and checksum) on top
 * of subject, headers and payload: measured against a real server, whose state.bytes grows
 * by exactly this much more than those three for every message the adapter publishes.
 */
const STORED_OVERHEAD_BYTES = 34;

/** Called once per stored message, in sequence order: what the invariant checkers fold. */
export type CommitListener = (message: SimMessage) => void;

export class SimStream {
  private lastSeq = 0;
  private bytes = 0;
  private readonly messages: SimMessage[] = [];
  private readonly bySubject = new Map<string, SimMessage[]>();
  /** Message id -> the message it names, while inside the duplicate window. */
  private readonly msgIds = new Map<string, { readonly seq: number; readonly atMs: number }>();
  /** Message ids in the order they were stored: the window expires from the front. */
  private readonly idOrder: { readonly id: string; readonly atMs: number }[] = [];
  private idHead = 0;
  private readonly listeners: CommitListener[] = [];
  /** While set, every new message is refused as by a full stream (an operator has yet to raise the limit). */
  full = false;

  constructor(
    readonly config: SimStreamConfig,
    private readonly registry: EventRegistry,
    /** The server's clock: the duplicate window is measured on it. */
    private readonly nowMs: () => number,
  ) {}

  onCommit(listener: CommitListener): void {
    this.listeners.push(listener);
  }

  get lastSequence(): number {
    return this.lastSeq;
  }

  get storedBytes(): number {
    return this.bytes;
  }

  /** Stores `data` as one message on `subject`, or answers a duplicate, or refuses it. */
  publish(subject: string, data: Uint8Array, headerBytes: number, msgId: string, expected: number): PublishAck {
    this.expireIds();
    const known = this.msgIds.get(msgId);
    if (known) return { kind: 'duplicate', seq: known.seq };
    const last = this.subjectLast(subject);
    if (last !== expected) return { kind: 'wrong_last_sequence', last };
    const storedBytes = STORED_OVERHEAD_BYTES + subject.length + headerBytes + data.length;
    if (this.full || (this.config.maxBytes >= 0 && this.bytes + storedBytes > this.config.maxBytes))
      return { kind: 'maximum_bytes_exceeded' };
    const decoded = this.registry.decodeCommit(data);
    // The adapter validated every event on encode: a message that does not decode is a bug in the simulator.
    if (!decoded.ok) throw new Error(`a commit on ${subject} does not decode: ${JSON.stringify(decoded.errors)}`);
    const seq = ++this.lastSeq;
    const events = decoded.value.map((event, position) => deepFreeze({ sequence: seq, subject, event, position }));
    const message: SimMessage = { seq, subject, msgId, previous: expected, storedBytes, events };
    this.messages.push(message);
    const list = this.bySubject.get(subject);
    if (list) list.push(message);
    else this.bySubject.set(subject, [message]);
    this.bytes += storedBytes;
    const atMs = this.nowMs();
    this.msgIds.set(msgId, { seq, atMs });
    this.idOrder.push({ id: msgId, atMs });
    for (const listener of this.listeners) listener(message);
    return { kind: 'stored', seq };
  }

  /** The message at a stream sequence (a direct get by sequence). */
  message(seq: number): SimMessage | undefined {
    const message = this.messages[seq - 1];
    return message?.seq === seq ? message : undefined;
  }

  /** The subject's last sequence, 0 when it has none. */
  subjectLast(subject: string): number {
    const list = this.bySubject.get(subject);
    return list === undefined ? 0 : list[list.length - 1]!.seq;
  }

  /**
   * The subject's messages with a sequence above `after`, and at most `upTo` (a lagging
   * replica answers as of an earlier sequence). Binary search: loads are frequent.
   */
  subjectMessages(subject: string, after: number, upTo = Number.MAX_SAFE_INTEGER): readonly SimMessage[] {
    const list = this.bySubject.get(subject);
    if (list === undefined) return [];
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list[mid]!.seq <= after) lo = mid + 1;
      else hi = mid;
    }
    let end = list.length;
    while (end > lo && list[end - 1]!.seq > upTo) end--;
    return lo === 0 && end === list.length ? list : list.slice(lo, end);
  }

  /** Every subject that has messages, in the order each first appeared. */
  subjects(): string[] {
    return [...this.bySubject.keys()];
  }

  /** Every message in sequence order: what a replay from scratch reads. */
  all(): readonly SimMessage[] {
    return this.messages;
  }

  private expireIds(): void {
    const horizon = this.nowMs() - this.config.duplicateWindowMs;
    while (this.idHead < this.idOrder.length && this.idOrder[this.idHead]!.atMs <= horizon) {
      const { id, atMs } = this.idOrder[this.idHead++]!;
      if (this.msgIds.get(id)?.atMs === atMs) this.msgIds.delete(id);
    }
    if (this.idHead > 4096 && this.idHead * 2 > this.idOrder.length) {
      this.idOrder.splice(0, this.idHead);
      this.idHead = 0;
    }
  }
}

/** Stored events are shared by every reader, as the bytes of a stream message are: none may change them. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}
