// Submitting and aborting work, shared by POST /v1/work, the `work.submit` command and
// POST /v1/work/{id}/abort. Submission appends WorkSubmitted (idempotent by work id: the
// command id derives from it; it records the token's fingerprint, not the token) and then
// enqueues the id and token with Nats-Msg-Id = work id, so a repeated submission neither
// records nor queues the unit twice.
import type { SubmitWorkDto } from '@tally/contracts';
import type { Rejection, WorkLimitsInput } from '@tally/orchestrator-domain';
import { WORK_UNITS_PROJECTION } from '@tally/orchestrator-projections';
import type { TallyConfig } from '@tally/platform-app';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { injectTrace, streamFullOf } from '@tally/platform-jetstream';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';
import type { LiveMode } from '../gateway/live-messages.js';

export type SubmitOutcome =
  | { readonly ok: true; readonly work_id: string; readonly status: 'queued' }
  | { readonly ok: false; readonly rejection: Rejection };

export type AbortOutcome = { readonly ok: true } | { readonly ok: false; readonly rejection: Rejection };

export const ABORT_REASON = 'aborted by request';

/** Who submits: the capability token the unit runs with, and the tenant it belongs to. */
export interface WorkOwner {
  readonly token: string;
  readonly tenant_id: string;
}

/** The owner of a submission on the NATS subject, which carries the token in its body. */
export function ownerFromBody(dto: SubmitWorkDto): WorkOwner | undefined {
  return dto.token === undefined ? undefined : { token: dto.token, tenant_id: 'default' };
}

/** Limits the submitter left out come from config, so operators set the defaults in one place. */
export function limitsFor(config: TallyConfig, submitted: SubmitWorkDto['limits']): WorkLimitsInput {
  const o = config.orchestrator;
  return {
    max_retries: submitted?.max_retries ?? o.max_retries,
    run_retry_attempts: submitted?.run_retry_attempts ?? o.run_retry_attempts,
    max_tokens: submitted?.max_tokens ?? o.max_tokens,
    timeout_ms: submitted?.timeout_ms ?? o.timeout_ms,
    retry_base_backoff_ms: o.retry_base_backoff_ms,
    // An endurance round waits longer than a same-leg retry; both stay under the configured cap.
    run_retry_base_backoff_ms: Math.min(o.retry_base_backoff_ms * 4, o.retry_max_backoff_ms),
    max_backoff_ms: o.retry_max_backoff_ms,
    ...(submitted?.dispatch_ceiling === undefined ? {} : { dispatch_ceiling: submitted.dispatch_ceiling }),
  };
}

export class WorkSubmission {
  constructor(private readonly rt: OrchestratorRuntime) {}

  async submit(dto: SubmitWorkDto, workId: string, owner: WorkOwner | undefined): Promise<SubmitOutcome> {
    if (owner === undefined) return { ok: false, rejection: { code: 'invalid_work', message: 'token is required' } };
    const result = await this.rt.units.submit({
      work_id: workId,
      session_id: dto.session_id ?? workId,
      purpose: dto.purpose,
      token: owner.token,
      tenant_id: owner.tenant_id,
      route: dto.route.map((l) => ({ provider: l.provider, model: l.model })),
      messages: dto.messages.map((m) => ({ role: m.role, content: m.content })),
      limits: limitsFor(this.rt.ctx.config, dto.limits),
    });
    if (!result.ok) return result;
    await this.enqueue(workId, owner.token);
    await this.projected(workId, result.sequence);
    return { ok: true, work_id: workId, status: 'queued' };
  }

  /**
   * Read-your-writes: waits until the projection has committed the command's own sequence,
   * so a GET after the answer reads it from the projection. A projection that lags past the
   * bound does not fail the command (it is recorded); the wait is logged and the read may
   * briefly be behind.
   */
  private async projected(workId: string, sequence: number): Promise<void> {
    const { projections, config, logger } = this.rt.ctx;
    const timeoutMs = config.orchestrator.read_your_writes_timeout_ms;
    if (timeoutMs === 0) return;
    if (!(await projections.waitFor(WORK_UNITS_PROJECTION, sequence, timeoutMs))) {
      logger.event('warn', 'the work projection did not reach this write in time; reads may lag it', {
        work_id: workId,
        sequence,
        timeout_ms: timeoutMs,
      });
    }
  }

  /**
   * Queues the unit for the dispatch workers, with its capability token: the queue message is
   * the only place the token is kept (ADR 0007). Within the duplicate window a repeat is
   * dropped by the stream.
   */
  async enqueue(workId: string, token: string, live?: LiveMode): Promise<void> {
    const { nats, config } = this.rt.ctx;
    const subject = nats.names.workQueueSubject;
    try {
      const message = live === undefined ? { work_id: workId, token } : { work_id: workId, token, live };
      await nats.js.publish(subject, JSON.stringify(message), {
        msgID: workId,
        // The submitting request's trace continues in the worker that takes the unit.
        headers: injectTrace(natsHeaders()),
        timeout: config.nats.publish_timeout_ms,
      });
    } catch (error) {
      // A full queue is a clear refusal; the unit stays recorded as queued and the sweeper queues it again later.
      throw streamFullOf(error, nats.names.workQueueStream, subject) ?? error;
    }
  }

  /** Records the abort, then tells the workers at once; a worker also re-checks the unit's events while it works. */
  async abort(workId: string): Promise<AbortOutcome> {
    const result = await this.rt.units.requestAbort(workId, ABORT_REASON, `${workId}:abort`);
    if (!result.ok) return result;
    this.rt.ctx.nats.nc.publish(this.rt.abortSubject, workId, { headers: injectTrace(natsHeaders()) });
    await this.projected(workId, result.sequence);
    return { ok: true };
  }
}
