// A background loop with an explicit interval: one sweep at a time, never overlapping,
// a failure logged and retried on the next tick, and a stop that waits for the sweep in
// flight so shutdown never cuts a step in half.
import type { BackgroundTask, JsonLogger } from '@tally/platform-app';

export class SweepLoop implements BackgroundTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly sweep: () => Promise<void>,
    private readonly logger: JsonLogger,
  ) {}

  start(): this {
    this.schedule();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweep()
        .catch((error: unknown) =>
          this.logger.event('error', `${this.name} sweep failed; retrying next interval`, {
            error: (error as Error).message,
          }),
        )
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.intervalMs);
  }
}
