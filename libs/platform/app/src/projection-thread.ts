// The main thread's side of a projection worker thread. It starts the thread, restarts it
// (with a bounded backoff, logged loudly) if it dies, answers "has my write been
// projected?" from the checkpoints the thread reports, and stops it on shutdown.
import { Worker } from 'node:worker_threads';
import { CommitWatch, pollCheckpoint, type QuarantineEntry } from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import type { JsonLogger } from './json-logger.js';
import type { ReadinessCheck } from './health.js';
import type { Projections } from './projection-host.js';
import { moduleUrl } from './module-url.js';

export interface ProjectionThreadData {
  readonly service: string;
  readonly instanceId: string;
  readonly projectorUrl: string;
}

export type ToProjectionThread = { readonly kind: 'stop' };

export type FromProjectionThread =
  | { readonly kind: 'started' | 'status'; readonly leader: boolean; readonly restarts: number }
  | { readonly kind: 'committed'; readonly projection: string; readonly checkpoint: number }
  | { readonly kind: 'quarantined'; readonly entry: QuarantineEntry }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'failed'; readonly error: string };

export interface ProjectionThreadOptions extends ProjectionThreadData {
  /** The projections the thread runs: what a request may wait for. */
  readonly projections: readonly { readonly name: string; readonly stream: string }[];
  /** The main thread's connection: used to poll checkpoints when another replica runs the projections. */
  readonly dataSource: DataSource;
  readonly logger: JsonLogger;
  readonly startTimeoutMs: number;
  readonly stopTimeoutMs: number;
  readonly restartDelayMaxMs: number;
  readonly waitPollMs: number;
  /** Told each aggregate the thread quarantines, before the checkpoint past it reaches any waiting read. */
  readonly onQuarantined?: (entry: QuarantineEntry) => void;
}

const WORKER_URL = moduleUrl('./projection-thread.worker', import.meta.url);

export class ProjectionThread implements Projections {
  private worker: Worker | undefined;
  /** A thread is running and has started its projections (or is standing by for the lease). */
  private started = false;
  private stopping = false;
  private leader = false;
  private restarts = 0;
  private threadRestarts = 0;
  /** Per projection: what the thread has reported, and the requests waiting on it. */
  private readonly watches: ReadonlyMap<
    string,
    { readonly projection: { name: string; stream: string }; readonly watch: CommitWatch }
  >;

  constructor(private readonly options: ProjectionThreadOptions) {
    this.watches = new Map(
      options.projections.map((projection) => [projection.name, { projection, watch: new CommitWatch() }]),
    );
  }

  /** Rejects when the first thread does not start: the service should not boot without its projections. */
  async start(): Promise<void> {
    await this.spawn(false);
  }

  /** A restarted thread that fails exits, and is restarted again after a longer delay. */
  private spawn(restart: boolean): Promise<void> {
    const { service, instanceId, projectorUrl } = this.options;
    const worker = new Worker(WORKER_URL, {
      workerData: { service, instanceId, projectorUrl } satisfies ProjectionThreadData,
    });
    this.worker = worker;
    let started = false;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => (
          reject(new Error(`the projection thread did not start within ${this.options.startTimeoutMs} ms`)),
          void worker.terminate()
        ),
        this.options.startTimeoutMs,
      );
      worker.on('message', (message: FromProjectionThread) => {
        if (message.kind === 'started') {
          clearTimeout(timer);
          started = true;
          resolve();
        }
        if (message.kind === 'failed') {
          clearTimeout(timer);
          reject(new Error(`the projection thread failed: ${message.error}`));
        }
        this.onMessage(message);
      });
      worker.on('error', (error) =>
        this.options.logger.event('error', 'projection thread crashed', { error: error.message }),
      );
      worker.once('exit', (code) => {
        clearTimeout(timer);
        if (this.worker === worker && (started || restart)) this.onExit(code);
        if (!started) reject(new Error(`the projection thread exited with code ${code} before it started`));
      });
    });
  }

  private onMessage(message: FromProjectionThread): void {
    if (message.kind === 'started') this.started = true;
    if (message.kind === 'started' || message.kind === 'status') {
      this.leader = message.leader;
      this.restarts = message.restarts;
    }
    if (message.kind === 'quarantined') this.options.onQuarantined?.(message.entry);
    if (message.kind !== 'committed') return;
    // Only the lease holder runs the projections, so a commit also says the thread leads.
    this.leader = true;
    this.watches.get(message.projection)?.watch.advance(message.checkpoint);
  }

  /** An exit we did not ask for: nothing projects on this replica until the thread is back. */
  private onExit(code: number): void {
    this.worker = undefined;
    this.started = false;
    this.leader = false;
    if (this.stopping) return;
    this.threadRestarts++;
    const delayMs = Math.min(100 * 2 ** Math.min(this.threadRestarts, 10), this.options.restartDelayMaxMs);
    this.options.logger.event('error', 'projection thread exited; restarting it', {
      code,
      restarts: this.threadRestarts,
      delay_ms: delayMs,
    });
    setTimeout(() => {
      if (!this.stopping)
        this.spawn(true).catch((error: unknown) =>
          this.options.logger.event('error', 'projection thread did not restart', { error: String(error) }),
        );
    }, delayMs);
  }

  async waitFor(projectionName: string, sequence: number, timeoutMs: number): Promise<boolean> {
    const watched = this.watches.get(projectionName);
    if (!watched) throw new Error(`unknown projection ${projectionName}`);
    if (watched.watch.checkpoint >= sequence) return true;
    if (this.leader && (await watched.watch.wait(sequence, timeoutMs))) return true;
    // Another replica runs the projections (or ours just stopped): the database has the answer.
    return pollCheckpoint(
      this.options.dataSource,
      watched.projection,
      sequence,
      this.leader ? 0 : timeoutMs,
      this.options.waitPollMs,
    );
  }

  readiness(): ReadinessCheck {
    return {
      name: 'projections',
      check: async () => {
        const checkpoints = Object.fromEntries([...this.watches].map(([name, { watch }]) => [name, watch.checkpoint]));
        return {
          ok: this.started,
          details: {
            worker_thread: this.started,
            leader: this.leader,
            restarts: this.restarts,
            thread_restarts: this.threadRestarts,
            checkpoints,
          },
        };
      },
    };
  }

  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const { watch } of this.watches.values()) watch.cancelAll();
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ kind: 'stop' } satisfies ToProjectionThread);
    const timer = setTimeout(() => void worker.terminate(), this.options.stopTimeoutMs);
    await exited;
    clearTimeout(timer);
  }
}
