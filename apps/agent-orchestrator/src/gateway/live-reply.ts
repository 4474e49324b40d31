// The HTTP side of a unit's live subject: subscribed before the unit is queued, it hands the
// caller each delta and the end as they arrive, and falls back to the unit's events (the
// record) when a notification is lost or the unit ended before anyone listened.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { WorkUnitState } from '@tally/orchestrator-domain';
import { liveEndOf } from './live-end.js';
import { decodeLive, type LiveMessage } from './live-messages.js';

/** Deltas buffered for a caller that reads slower than the provider streams; past it the stream is cut. */
const BUFFERED_MAX = 10_000;

export class LiveReply {
  private readonly queue: LiveMessage[] = [];
  private waiter: (() => void) | undefined;
  private readonly subscription: Subscription;
  private overflowed = false;

  constructor(nc: NatsConnection, subject: string) {
    this.subscription = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) return;
        const message = decodeLive(msg.data);
        if (!message) return;
        if (this.queue.length >= BUFFERED_MAX) this.overflowed = true;
        else this.queue.push(message);
        this.wake();
      },
    });
  }

  /** Hands over an end read from the record (the unit had ended, or a check of its events found it ended). */
  endFromState(state: WorkUnitState): boolean {
    const end = liveEndOf(state);
    if (!end) return false;
    this.queue.push({ kind: 'end', end });
    this.wake();
    return true;
  }

  /**
   * The next message, or undefined after `waitMs` without one (the caller then checks the
   * record). Throws when the caller fell too far behind.
   */
  async next(waitMs: number): Promise<LiveMessage | undefined> {
    if (this.overflowed) throw new RangeError(`more than ${BUFFERED_MAX} deltas waited for the caller`);
    const ready = this.queue.shift();
    if (ready) return ready;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve();
      }, waitMs);
      this.waiter = () => {
        clearTimeout(timer);
        this.waiter = undefined;
        resolve();
      };
    });
    return this.queue.shift();
  }

  close(): void {
    this.subscription.unsubscribe();
    this.wake();
  }

  private wake(): void {
    this.waiter?.();
  }
}
