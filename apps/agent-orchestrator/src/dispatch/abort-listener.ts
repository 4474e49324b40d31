// The units this process is working, by work id, so an abort notification (core NATS,
// published by whichever replica recorded the abort) cancels the call in flight at once.
// The notification is only a fast path: the worker also re-checks the unit's events.
import type { NatsConnection, Subscription } from '@nats-io/nats-core';

export class AbortListener {
  private readonly held = new Map<string, Set<AbortController>>();
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
  ) {}

  start(): void {
    this.subscription = this.nc.subscribe(this.subject, {
      callback: (error, msg) => {
        if (error) return;
        for (const controller of this.held.get(msg.string()) ?? []) controller.abort();
      },
    });
  }

  /** A signal that fires when the unit's abort is announced; release() it when the delivery ends. */
  hold(workId: string): { signal: AbortSignal; release(): void } {
    const controller = new AbortController();
    const set = this.held.get(workId) ?? new Set<AbortController>();
    set.add(controller);
    this.held.set(workId, set);
    return {
      signal: controller.signal,
      release: () => {
        set.delete(controller);
        if (set.size === 0 && this.held.get(workId) === set) this.held.delete(workId);
      },
    };
  }

  get inFlight(): number {
    let n = 0;
    for (const set of this.held.values()) n += set.size;
    return n;
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}
