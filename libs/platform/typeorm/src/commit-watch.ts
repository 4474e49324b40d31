// Waiting for a projection to reach a stream sequence ("has my write been projected?"):
// in the process that runs it, by being told each checkpoint it commits; anywhere else,
// by polling the checkpoint table.
import type { DataSource } from 'typeorm';
import { readCheckpoint } from './checkpoint-store.js';

interface Waiter {
  readonly sequence: number;
  readonly done: (reached: boolean) => void;
}

/** The highest checkpoint one projection is known to have reached, and who waits for more. */
export class CommitWatch {
  private reached = 0;
  private readonly waiters = new Set<Waiter>();

  get checkpoint(): number {
    return this.reached;
  }

  /** Records a checkpoint (a lower one is ignored) and wakes those waiting for it. Returns whether it was new. */
  advance(checkpoint: number): boolean {
    if (checkpoint <= this.reached) return false;
    this.reached = checkpoint;
    for (const waiter of [...this.waiters]) if (waiter.sequence <= checkpoint) waiter.done(true);
    return true;
  }

  /** Forgets what was reached, as when the projection is rebuilt from empty tables. */
  reset(): void {
    this.reached = 0;
  }

  /** Resolves true once `sequence` is reached, false after `timeoutMs` or when cancelled. */
  wait(sequence: number, timeoutMs: number): Promise<boolean> {
    if (this.reached >= sequence) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        sequence,
        done: (reached) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => waiter.done(false), timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Ends every wait with false (on shutdown). */
  cancelAll(): void {
    for (const waiter of [...this.waiters]) waiter.done(false);
  }
}

/** Polls the checkpoint table until `projection` has committed `sequence`; false after `timeoutMs`. */
export async function pollCheckpoint(
  dataSource: DataSource,
  projection: { readonly name: string; readonly stream: string },
  sequence: number,
  timeoutMs: number,
  pollMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await readCheckpoint(dataSource.manager, projection.name, projection.stream)) >= sequence) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
