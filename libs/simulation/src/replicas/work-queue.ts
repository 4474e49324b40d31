// The work queue and its one durable consumer, as JetStream runs them for the dispatch
// workers: a message is delivered to one worker at a time, within the worker's concurrency;
// it is acked once its unit ended, nak'ed with a delay when the unit is held elsewhere, and
// delivered again when its ack wait runs out (the first delivery may still be running: a
// duplicate). `working()` pushes the deadline out. After deliveriesMax it is dead-lettered.
import type { Prng } from '../core/prng.js';
import type { Owner, Scheduler } from '../core/scheduler.js';
import type { Faults } from '../world/faults.js';

export interface QueueLimits {
  readonly ackWaitMs: number;
  readonly deliveriesMax: number;
  readonly nakDelayMs: number;
  readonly latencyMs: number;
}

export interface Delivery {
  readonly work_id: string;
  readonly token: string;
  readonly number: number;
  /** Tells the server the delivery is still being worked (msg.working()). */
  working(): void;
  /** A caller's abort for this unit, when the notification reaches the worker (the AbortListener path). */
  readonly signal: AbortSignal;
}

export type DeliveryOutcome = 'ack' | 'nak' | 'term';

export interface QueueWorker {
  readonly owner: Owner;
  readonly slots: number;
  run(delivery: Delivery): Promise<DeliveryOutcome>;
}

interface Message {
  readonly work_id: string;
  readonly token: string;
  deliveries: number;
  /** The delivery the server waits on, and its deadline. */
  current: number | undefined;
  deadlineMs: number;
  availableAtMs: number;
  done: 'acked' | 'dead' | undefined;
  readonly aborts: AbortController[];
}

export class WorkQueue {
  private readonly messages = new Map<string, Message>();
  /** Messages neither done nor out on a delivery: what a pump looks at (the map keeps every message ever queued). */
  private readonly waiting = new Set<Message>();
  private openCount = 0;
  private readonly workers: QueueWorker[] = [];
  private readonly busy = new Map<Owner, number>();
  private pumping = false;
  readonly deadLettered: string[] = [];

  constructor(
    private readonly scheduler: Scheduler,
    private readonly rng: Prng,
    private readonly faults: Faults,
    private readonly limits: QueueLimits,
  ) {}

  attach(worker: QueueWorker): void {
    if (!this.workers.includes(worker)) this.workers.push(worker);
    this.pump();
  }

  publish(workId: string, token: string): void {
    if (this.messages.has(workId)) return;
    const message: Message = {
      work_id: workId,
      token,
      deliveries: 0,
      current: undefined,
      deadlineMs: 0,
      availableAtMs: this.scheduler.nowMs,
      done: undefined,
      aborts: [],
    };
    this.messages.set(workId, message);
    this.waiting.add(message);
    this.openCount++;
    this.pump();
  }

  /** Units whose message is neither acked nor dead-lettered. */
  open(): number {
    return this.openCount;
  }

  /** The caller's abort notification reaches whichever worker holds the unit now. */
  notifyAbort(workId: string): void {
    for (const abort of this.messages.get(workId)?.aborts ?? []) abort.abort();
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    this.scheduler.at(0, 'queue pump', undefined, () => {
      this.pumping = false;
      this.deliverAvailable();
    });
  }

  private deliverAvailable(): void {
    const now = this.scheduler.nowMs;
    for (const message of this.waiting) {
      if (message.availableAtMs > now) continue;
      const worker = this.freeWorker();
      if (!worker) return;
      this.deliver(message, worker);
      if (this.faults.strikes('queue_duplicate')) {
        const other = this.freeWorker();
        if (other) this.start(message, other, message.current!);
      }
    }
  }

  private freeWorker(): QueueWorker | undefined {
    const free = this.workers.filter((w) => w.owner.alive && (this.busy.get(w.owner) ?? 0) < w.slots);
    return free.length === 0 ? undefined : this.rng.pick(free);
  }

  private deliver(message: Message, worker: QueueWorker): void {
    if (message.deliveries >= this.limits.deliveriesMax) return this.end(message, 'dead');
    const number = ++message.deliveries;
    message.current = number;
    this.waiting.delete(message);
    message.deadlineMs = this.scheduler.nowMs + this.limits.ackWaitMs;
    this.watchDeadline(message, number);
    this.start(message, worker, number);
  }

  private start(message: Message, worker: QueueWorker, number: number): void {
    const owner = worker.owner;
    this.busy.set(owner, (this.busy.get(owner) ?? 0) + 1);
    const abort = new AbortController();
    message.aborts.push(abort);
    const delivery: Delivery = {
      work_id: message.work_id,
      token: message.token,
      number,
      signal: abort.signal,
      working: () => {
        if (message.current === number) message.deadlineMs = this.scheduler.nowMs + this.limits.ackWaitMs;
      },
    };
    const label = `queue -> ${owner.name} ${message.work_id} delivery ${number}`;
    this.scheduler.at(this.rng.latency(this.limits.latencyMs), label, owner, () => {
      void worker.run(delivery).then((outcome) => {
        this.busy.set(owner, (this.busy.get(owner) ?? 1) - 1);
        message.aborts.splice(message.aborts.indexOf(abort), 1);
        const back = `${owner.name} ${outcome} ${message.work_id} delivery ${number}`;
        this.scheduler.at(this.rng.latency(this.limits.latencyMs), back, owner, () =>
          this.finish(message, number, outcome),
        );
      });
    });
  }

  private finish(message: Message, number: number, outcome: DeliveryOutcome): void {
    if (message.done !== undefined) return this.pump();
    if (outcome === 'ack') this.end(message, 'acked');
    else if (outcome === 'term') this.end(message, 'dead');
    else if (message.current === number) {
      message.current = undefined;
      message.availableAtMs = this.scheduler.nowMs + this.limits.nakDelayMs;
      this.waiting.add(message);
      this.scheduler.at(this.limits.nakDelayMs, `queue ${message.work_id} back after nak`, undefined, () =>
        this.pump(),
      );
    }
    this.pump();
  }

  /** When the ack wait runs out without a working() or an ack, the message is delivered again. */
  private watchDeadline(message: Message, number: number): void {
    const wait = Math.max(1, message.deadlineMs - this.scheduler.nowMs);
    this.scheduler.at(wait, `queue ${message.work_id} ack wait ${number}`, undefined, () => {
      if (message.done !== undefined || message.current !== number) return;
      if (this.scheduler.nowMs < message.deadlineMs) return this.watchDeadline(message, number);
      message.current = undefined;
      message.availableAtMs = this.scheduler.nowMs;
      this.waiting.add(message);
      this.pump();
    });
  }

  private end(message: Message, how: 'acked' | 'dead'): void {
    message.done = how;
    this.waiting.delete(message);
    this.openCount--;
    if (how === 'dead') this.deadLettered.push(message.work_id);
  }
}
