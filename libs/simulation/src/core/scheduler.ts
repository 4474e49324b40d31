// The scheduler: virtual time and the one place anything in the simulation happens. Every
// awaited port call of the code under test is an operation here, due at a virtual time;
// a step runs the earliest one (ties in the order they were scheduled) and then lets the
// code run until it awaits again. Nothing else moves: no real timer, no real I/O, so the
// seed alone decides the interleaving. "Until it awaits again" is one setImmediate, which
// Node runs only once the microtask queue is empty.
import type { Trace } from './trace.js';

/** Who an operation belongs to: a replica's incarnation, or a client. A dead owner's operations never complete. */
export class Owner {
  alive = true;
  constructor(readonly name: string) {}
}

interface Op {
  readonly due: number;
  readonly seq: number;
  readonly owner: Owner | undefined;
  readonly label: string;
  readonly run: () => void;
  cancelled: boolean;
  /** A message already on the wire: it still reaches the server when its sender dies. */
  readonly inFlight: boolean;
}

export interface Scheduled {
  cancel(): void;
}

export class Scheduler {
  private heap: Op[] = [];
  private seq = 0;
  private stepCount = 0;
  nowMs: number;

  constructor(
    startMs: number,
    private readonly trace: Trace,
  ) {
    this.nowMs = startMs;
  }

  get steps(): number {
    return this.stepCount;
  }

  get pending(): number {
    return this.heap.length;
  }

  /** Runs `run` at now + delayMs as one step. An op of a dead owner is skipped, unless it is `inFlight`. */
  at(delayMs: number, label: string, owner: Owner | undefined, run: () => void, inFlight = false): Scheduled {
    const op: Op = {
      due: this.nowMs + Math.max(0, Math.round(delayMs)),
      seq: this.seq++,
      owner,
      label,
      run,
      cancelled: false,
      inFlight,
    };
    this.push(op);
    return { cancel: () => void (op.cancelled = true) };
  }

  /** The Sleep port: resolves after `ms` of virtual time, or at once (without throwing) when `signal` aborts. */
  sleep(owner: Owner | undefined, ms: number, signal?: AbortSignal, label = 'sleep'): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        timer.cancel();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = this.at(ms, `${owner?.name ?? 'sim'} ${label} ${Math.round(ms)}ms`, owner, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** The owner dies: its operations never complete, except messages already on the wire. */
  kill(owner: Owner): void {
    owner.alive = false;
  }

  /** Moves virtual time on (a clock jump); operations keep their due times. */
  jump(ms: number): void {
    this.nowMs += Math.max(0, Math.round(ms));
  }

  /** Runs the next live operation and lets the code settle; false when nothing is left. */
  async step(): Promise<boolean> {
    const op = this.popLive();
    if (!op) return false;
    if (op.due > this.nowMs) this.nowMs = op.due;
    this.stepCount++;
    this.trace.record(`${this.stepCount} ${this.nowMs} ${op.label}`);
    op.run();
    await settle();
    return true;
  }

  /** The due time of the next live operation. */
  nextDue(): number | undefined {
    while (this.heap.length > 0) {
      const top = this.heap[0]!;
      if (!this.isDead(top)) return top.due;
      this.pop();
    }
    return undefined;
  }

  private isDead(op: Op): boolean {
    return op.cancelled || (op.owner !== undefined && !op.owner.alive && !op.inFlight);
  }

  private popLive(): Op | undefined {
    while (this.heap.length > 0) {
      const op = this.pop()!;
      if (!this.isDead(op)) return op;
    }
    return undefined;
  }

  private push(op: Op): void {
    const heap = this.heap;
    heap.push(op);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): Op | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Op, b: Op): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

/** Resolves once every microtask the last step started has run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
