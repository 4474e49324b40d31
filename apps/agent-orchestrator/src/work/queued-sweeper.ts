// Recovers units that were recorded but never reached the work queue (a crash, or a lost
// publish, between appending WorkSubmitted and queueing it), and units whose queue message
// was dead-lettered while they were still queued. Every interval it re-publishes a bounded
// batch of units the projection still shows `queued` after a grace period. The worker is
// idempotent (the unit's events decide what happens), so a redundant message costs one
// load and an ack, never a second dispatch.
import type { BackgroundTask } from '@tally/platform-app';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';

export interface QueuedSweepOptions {
  readonly intervalMs: number;
  /** A unit is swept only once it has been queued this long; longer than any submission's publish. */
  readonly graceMs: number;
  /** Most units re-published per sweep. */
  readonly batchMax: number;
  /** The submission's publish timeout: the most a recorded unit's own queue message can trail its record. */
  readonly publishTimeoutMs: number;
}

/**
 * The message id of the n-th re-publication. A fresh generation per grace period gets past
 * the stream's duplicate window (the first message used the bare work id), while replicas
 * sweeping in the same period publish the same id and the stream keeps one.
 */
export function requeueMessageId(workId: string, submittedAtMs: number, nowMs: number, graceMs: number): string {
  const generation = Math.max(1, Math.floor((nowMs - submittedAtMs) / graceMs));
  return `${workId}:requeue:${generation}`;
}

/**
 * Units to re-publish, oldest first. A unit is left alone while its own message may still be
 * in the queue, i.e. while the queue's oldest message is not newer than the unit's record
 * plus the publish timeout: a re-publication without the capability token (ADR 0007) must
 * not overtake a backlog and fail a metered unit that is merely waiting its turn.
 */
export function unitsToRequeue(
  queued: readonly { work_id: string; submitted_at: string }[],
  nowMs: number,
  oldestQueuedMs: number,
  o: QueuedSweepOptions,
) {
  return queued.filter((u) => {
    const submittedMs = Date.parse(u.submitted_at);
    return (
      Number.isFinite(submittedMs) &&
      submittedMs + o.graceMs <= nowMs &&
      submittedMs + o.publishTimeoutMs < oldestQueuedMs
    );
  });
}

export function startQueuedSweeper(rt: OrchestratorRuntime, o: QueuedSweepOptions): BackgroundTask {
  if (!(o.graceMs > o.publishTimeoutMs))
    throw new Error(
      `orchestrator.queued_grace_ms (${o.graceMs}) must exceed nats.publish_timeout_ms (${o.publishTimeoutMs})`,
    );
  const { nats, logger } = rt.ctx;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;

  const sweep = async () => {
    const queued = await rt.reads.queuedUnits(o.batchMax);
    if (queued.length === 0) return;
    const state = (await nats.jsm.streams.info(nats.names.workQueueStream)).state;
    const oldestQueuedMs = state.messages === 0 ? Number.POSITIVE_INFINITY : Date.parse(state.first_ts);
    const nowMs = Date.now();
    const due = unitsToRequeue(queued, nowMs, oldestQueuedMs, o);
    for (const unit of due) {
      if (stopped) return;
      const msgID = requeueMessageId(unit.work_id, Date.parse(unit.submitted_at), nowMs, o.graceMs);
      await nats.js.publish(nats.names.workQueueSubject, JSON.stringify({ work_id: unit.work_id }), {
        msgID,
        timeout: o.publishTimeoutMs,
      });
    }
    if (due.length > 0)
      logger.event('warn', 're-queued units still queued after the grace period', {
        units: due.map((u) => u.work_id),
        grace_ms: o.graceMs,
      });
  };

  const tick = () => {
    running = sweep()
      .catch((error: unknown) =>
        logger.event('error', 'queued sweep failed; retrying next interval', {
          error: error instanceof Error ? error.message : String(error),
        }),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, o.intervalMs);
      });
  };
  timer = setTimeout(tick, o.intervalMs);
  logger.event('info', 'queued sweeper running', {
    interval_ms: o.intervalMs,
    grace_ms: o.graceMs,
    batch_max: o.batchMax,
  });
  return {
    name: 'queued-sweeper',
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
