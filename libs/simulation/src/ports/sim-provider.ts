// The simulated LLM provider: the ProviderGateway port of each orchestrator replica, over one
// shared server. Every call that reaches the server is a paid call, and the server holds it
// to the ledger: it must be for a hold the budget stream shows captured and admitted, whose
// budget is still held (not given back), and a hold pays for one call only. Its answers are
// a real provider's: replies within max_tokens, failures before and after generation, rate
// limits, deadlines, and now and then a bill past max_tokens (an overrun, ADR 0043).
import type { DispatchOutcome, DispatchRequest, ProviderGateway } from '@tally/orchestrator-application';
import type { Prng } from '../core/prng.js';
import type { Owner, Scheduler } from '../core/scheduler.js';
import type { LedgerShadow } from '../check/ledger-shadow.js';
import type { Faults } from '../world/faults.js';

/** Simulated work units say which unit they are in their first message, so the provider can find the hold. */
export const WORK_MARK = 'work:';

export class ProviderServer {
  private readonly callsPerHold = new Map<string, number>();
  calls = 0;
  overruns = 0;

  constructor(
    private readonly shadow: LedgerShadow,
    private readonly faults: Faults,
    private readonly rng: Prng,
    private readonly violation: (detail: string) => void,
  ) {}

  /** A call reached the provider: it is paid for, so it must be covered by an admission that still holds. */
  admit(workId: string, holdId: string | undefined): void {
    this.calls++;
    if (holdId === undefined) return this.violation(`paid call for ${workId} with no attempt started by its worker`);
    const hold = this.shadow.holds.get(holdId);
    if (!hold?.admitted) return this.violation(`paid call for ${workId} on hold ${holdId}, which is not admitted`);
    // Retained keeps the whole exposure (B5); any other closed status gave the budget back.
    if (hold.status !== 'captured' && hold.status !== 'retained')
      this.violation(`paid call for ${workId} on hold ${holdId}, which is already ${hold.status}`);
    const calls = (this.callsPerHold.get(holdId) ?? 0) + 1;
    this.callsPerHold.set(holdId, calls);
    if (calls > 1) this.violation(`hold ${holdId} paid for ${calls} provider calls`);
  }

  /** The provider's answer to a call and how long it takes. */
  answer(request: DispatchRequest): { outcome: DispatchOutcome; durationMs: number } {
    const durationMs = 50 + this.rng.int(2_000);
    const input_tokens = 1 + this.rng.int(8);
    const output_tokens = 1 + this.rng.int(Math.max(1, request.max_tokens));
    const ok = (output: number): DispatchOutcome => ({
      kind: 'ok',
      output: 'simulated reply',
      usage: { input_tokens, output_tokens: output },
      latency_ms: durationMs,
    });
    if (!this.faults.strikes('provider')) return { outcome: ok(output_tokens), durationMs };
    const failed = (
      domain: 'network' | 'provider' | 'request' | 'deadline',
      settlement: 'failed' | 'unknown',
      error: string,
      extra = {},
    ) => ({ kind: 'error', domain, settlement, error, latency_ms: durationMs, ...extra }) as DispatchOutcome;
    switch (this.faults.draw.int(6)) {
      case 0:
        return {
          outcome: failed('network', 'unknown', 'connection reset mid-stream', { partial_output: 'simul' }),
          durationMs,
        };
      case 1:
        return { outcome: failed('provider', 'failed', 'HTTP 503 overloaded', { http_status: 503 }), durationMs };
      case 2:
        return {
          outcome: failed('provider', 'failed', 'HTTP 429 rate limited', {
            http_status: 429,
            retry_after_ms: 500 + this.rng.int(3_000),
          }),
          durationMs,
        };
      case 3:
        return { outcome: failed('deadline', 'unknown', 'deadline exceeded'), durationMs: request.timeout_ms };
      case 4:
        this.overruns++;
        return { outcome: ok(request.max_tokens + 1 + this.rng.int(request.max_tokens)), durationMs };
      default:
        return { outcome: failed('request', 'failed', 'HTTP 400 invalid request', { http_status: 400 }), durationMs };
    }
  }
}

export interface ProviderWire {
  readonly scheduler: Scheduler;
  readonly latency: Prng;
  readonly latencyMs: number;
}

/**
 * One orchestrator replica's gateway. `startedHold` names the hold of the attempt this
 * replica just started on the unit: the worker calls the provider right after that append
 * is acknowledged, within the same step.
 */
export function scheduledGateway(
  server: ProviderServer,
  wire: ProviderWire,
  owner: Owner,
  startedHold: (workId: string) => string | undefined,
): ProviderGateway {
  return {
    dispatch(request, signal, onProgress) {
      const workId = workIdOf(request);
      const holdId = startedHold(workId);
      const started = wire.scheduler.nowMs;
      return new Promise<DispatchOutcome>((resolve) => {
        let done = false;
        const finish = (outcome: DispatchOutcome) => {
          if (done) return;
          done = true;
          signal.removeEventListener('abort', cancel);
          resolve(outcome);
        };
        const cancel = () =>
          finish({
            kind: 'error',
            domain: 'unknown',
            settlement: 'cancelled',
            error: 'aborted by caller',
            latency_ms: wire.scheduler.nowMs - started,
          });
        // A call aborted before it is sent is never sent.
        if (signal.aborted) return cancel();
        signal.addEventListener('abort', cancel, { once: true });
        const arrive = () => {
          server.admit(workId, holdId);
          const { outcome, durationMs } = server.answer(request);
          wire.scheduler.at(durationMs / 2, `${owner.name} provider progress ${workId}`, owner, () => onProgress?.());
          wire.scheduler.at(durationMs, `${owner.name} provider answers ${workId} ${outcome.kind}`, owner, () =>
            finish(outcome),
          );
        };
        wire.scheduler.at(
          wire.latency.latency(wire.latencyMs),
          `${owner.name} provider call ${workId} ${holdId}`,
          owner,
          arrive,
          true,
        );
      });
    },
  };
}

function workIdOf(request: DispatchRequest): string {
  const first = request.messages[0]?.content ?? '';
  return first.startsWith(WORK_MARK) ? first.slice(WORK_MARK.length).split(' ')[0]! : '?';
}
