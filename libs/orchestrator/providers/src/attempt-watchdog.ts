// Bounds one attempt in time: an overall deadline (timeout_ms) from the moment the request is
// sent, and an idle deadline between chunks once the response has started. It merges the
// caller's AbortSignal so a single signal stops the request, and remembers which one fired so
// the outcome can be classified (caller → cancelled, timers → deadline).

export type WatchdogReason = 'caller' | 'deadline' | 'idle';

export class AttemptWatchdog {
  private readonly controller = new AbortController();
  private firedReason: WatchdogReason | undefined;
  private readonly overallTimer: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly onCallerAbort = (): void => this.fire('caller');

  constructor(
    private readonly callerSignal: AbortSignal,
    readonly timeoutMs: number,
    readonly idleTimeoutMs: number,
  ) {
    if (!(timeoutMs > 0) || !(idleTimeoutMs > 0)) throw new Error('AttemptWatchdog: timeouts must be positive');
    this.overallTimer = setTimeout(() => this.fire('deadline'), timeoutMs);
    if (callerSignal.aborted) this.fire('caller');
    else callerSignal.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get reason(): WatchdogReason | undefined {
    return this.firedReason;
  }

  /** Call on every received chunk; the first call starts the idle deadline. */
  touch(): void {
    if (this.firedReason !== undefined) return;
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.fire('idle'), this.idleTimeoutMs);
  }

  dispose(): void {
    clearTimeout(this.overallTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.callerSignal.removeEventListener('abort', this.onCallerAbort);
  }

  private fire(reason: WatchdogReason): void {
    if (this.firedReason !== undefined) return;
    this.firedReason = reason;
    this.controller.abort(new Error(`attempt stopped: ${reason}`));
  }
}
