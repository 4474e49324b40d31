// Serializes work per key inside one process: every step on one delegation tree runs
// after the previous one finished, so a hot tree does not fight itself with conflicts.
// Other processes are kept honest by optimistic concurrency on the stream, not by this.

export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly depth = new Map<string, number>();

  constructor(private readonly waitingMax: number) {}

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const waiting = this.depth.get(key) ?? 0;
    // A bounded queue sheds load with a named error instead of growing without limit.
    if (waiting >= this.waitingMax) return Promise.reject(new QueueFull(key, this.waitingMax));
    this.depth.set(key, waiting + 1);
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      const left = (this.depth.get(key) ?? 1) - 1;
      if (left === 0) {
        this.depth.delete(key);
        if (this.tails.get(key) === tail) this.tails.delete(key);
      } else this.depth.set(key, left);
    });
    return next;
  }
}

export class QueueFull extends Error {
  override readonly name = 'QueueFull';
  constructor(
    readonly key: string,
    readonly waitingMax: number,
  ) {
    super(`more than ${waitingMax} steps are waiting on ${key}`);
  }
}
