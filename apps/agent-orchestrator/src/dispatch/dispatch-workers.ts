// The dispatch workers of one process: a share of the ONE durable pull consumer on the
// work queue (every replica uses the same consumer name, so each unit is delivered to
// one worker at a time), at most orchestrator.worker_concurrency units in flight here.
// A delivery is acked only once its unit has ended; a redelivered unit resumes from its
// events (an unsettled attempt is settled unknown and counts against the ceiling).
import { decodeJson, ID_PATTERN } from '@tally/contracts';
import {
  DispatchWorker,
  type BudgetPort,
  type ProviderGateway,
  type PriceTable,
  type PromptProfiles,
} from '@tally/orchestrator-application';
import { DISPATCH_CONSUMER, type BackgroundTask } from '@tally/platform-app';
import type { JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import {
  inSpan,
  injectTrace,
  PermanentFailure,
  SpanKind,
  startDurableConsumer,
  traceContextOf,
} from '@tally/platform-jetstream';
import { IsIn, IsOptional, IsString, Length, Matches } from 'class-validator';
import { liveEndOf } from '../gateway/live-end.js';
import { encodeLive, type LiveMode } from '../gateway/live-messages.js';
import { randomUUID } from 'node:crypto';
import { Counter, Gauge } from 'prom-client';
import { clock, CONFLICT_RETRIES_MAX, type OrchestratorRuntime } from '../orchestrator.runtime.js';
import { AbortListener } from './abort-listener.js';
import { dispatchCounters, ObservedGateway, registerWorkQueueGauges } from './dispatch-metrics.js';

/** One attempt takes about four plan-and-act steps; the largest ceiling is 200 attempts. */
const STEPS_MAX = 1_000;
/** Fallback re-check of a unit's events during a call; the abort notification is the fast path. */
const ABORT_POLL_MS = 1_000;
const PULL_EXPIRES_MS = 10_000;
const FETCH_RETRY_DELAY_MS = 1_000;
const NAK_DELAY_MS = 500;
/** How long a graceful stop waits for units in flight; the rest are redelivered after ack wait. */
const STOP_TIMEOUT_MS = 10_000;

/**
 * A work-queue message. It carries the capability token because the ledger does not (ADR
 * 0007): the queue's work-queue retention deletes it once the unit's delivery is acked.
 * The sweeper's re-publications have no token (it has none to give).
 */
export class WorkQueuedDto {
  @Matches(ID_PATTERN) work_id!: string;
  @IsOptional() @IsString() @Length(1, 16_384) token?: string;
  /** A drop-in caller waits on the unit's live subject: publish its deltas and end, or its end only (ADR 0036). */
  @IsOptional() @IsIn(['deltas', 'end']) live?: LiveMode;
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

export interface DispatchDeps {
  readonly gateway: ProviderGateway;
  readonly prices: PriceTable;
  readonly prompts: PromptProfiles;
  readonly budget: BudgetPort;
}

export async function startDispatchWorkers(rt: OrchestratorRuntime, deps: DispatchDeps): Promise<BackgroundTask> {
  const { ctx } = rt;
  const { config, nats, logger } = ctx;
  const c = config.consumers;
  const concurrency = config.orchestrator.worker_concurrency;
  if (c.ack_pending_max < concurrency)
    logger.event(
      'warn',
      'consumers.ack_pending_max is below orchestrator.worker_concurrency; workers cannot fill their slots',
      { ack_pending_max: c.ack_pending_max, worker_concurrency: concurrency },
    );
  const counters = dispatchCounters(ctx.metrics.registry);
  const worker = new DispatchWorker({
    repository: rt.repository,
    gateway: new ObservedGateway(deps.gateway, counters),
    budget: deps.budget,
    prices: deps.prices,
    prompts: deps.prompts,
    clock,
    jitter: Math.random,
    sleep,
    newId: randomUUID,
    outputs: rt.outputs,
    options: {
      stepsMax: STEPS_MAX,
      abortPollMs: ABORT_POLL_MS,
      conflictRetriesMax: CONFLICT_RETRIES_MAX,
      // Two thirds of the ack wait: long enough to ride out a stream leader election (issue 9),
      // short enough that the delivery is not handed to another worker meanwhile.
      recordRetryMs: Math.floor((c.ack_wait_ms * 2) / 3),
    },
  });
  const aborts = new AbortListener(nats.nc, rt.abortSubject);
  aborts.start();
  const metrics = workerMetrics(ctx.metrics.registry, aborts);
  const progressEveryMs = Math.max(100, Math.floor(c.working_interval_ms / 2));
  const consumer = await startDurableConsumer<WorkQueuedDto>({
    nc: nats.nc,
    js: nats.js,
    jsm: nats.jsm,
    names: nats.names,
    stream: nats.names.workQueueStream,
    durable: DISPATCH_CONSUMER,
    filterSubject: nats.names.workQueueSubject,
    deadLetterSource: DISPATCH_CONSUMER,
    ackWaitMs: c.ack_wait_ms,
    deliveriesMax: c.deliveries_max,
    ackPendingMax: c.ack_pending_max,
    fetchBatch: Math.min(c.fetch_batch, concurrency),
    concurrency,
    expiresMs: PULL_EXPIRES_MS,
    workingIntervalMs: c.working_interval_ms,
    nakDelayMs: NAK_DELAY_MS,
    nakDelayMaxMs: Math.max(NAK_DELAY_MS, c.nak_delay_max_ms),
    ackTimeoutMs: config.nats.publish_timeout_ms,
    fetchRetryDelayMs: FETCH_RETRY_DELAY_MS,
    stopTimeoutMs: STOP_TIMEOUT_MS,
    decode: (msg) => decodeJson(WorkQueuedDto, msg.data),
    logger: {
      info: (m, f) => logger.event('info', m, f),
      warn: (m, f) => logger.event('warn', m, f),
      error: (m, f) => logger.event('error', m, f),
    },
    // Each delivery continues the trace of the request that queued the unit.
    handle: (queued, msg) =>
      inSpan(
        'work dispatch',
        {
          kind: SpanKind.CONSUMER,
          parent: traceContextOf(msg.headers),
          attributes: { 'tally.work_id': queued.work_id, 'tally.delivery': msg.info.deliveryCount },
        },
        () => handleUnit(queued, msg),
      ),
  });
  async function handleUnit({ work_id, token, live }: WorkQueuedDto, msg: JsMsg): Promise<void> {
    counters.queueWait.observe(Math.max(0, Date.now() - msg.info.timestampNanos / 1e6) / 1000);
    const held = aborts.hold(work_id);
    // The delivery's ack deadline starts now; long calls tell the server the delivery is
    // still being worked, at most this often (a short unit sends no progress at all).
    let lastProgressMs = Date.now();
    const onProgress = () => {
      const now = Date.now();
      if (now - lastProgressMs < progressEveryMs) return;
      lastProgressMs = now;
      msg.working();
    };
    try {
      const liveSubject = live === undefined ? undefined : nats.names.workLiveSubject(work_id);
      const result = await worker.process(work_id, {
        signal: held.signal,
        onProgress,
        ...(token === undefined ? {} : { credential: token }),
        ...(live === 'deltas' && liveSubject
          ? {
              onDelta: (ordinal, delta) =>
                nats.nc.publish(liveSubject, encodeLive({ kind: 'delta', ordinal, delta: delta as never }), {
                  headers: injectTrace(natsHeaders()),
                }),
            }
          : {}),
      });
      // A reply kept by reference (ADR 0019) is too large for a core NATS message: the
      // caller's side reads it from the record, which it re-checks every second.
      const byReference = result.kind === 'ended' && result.state.completion?.output_ref !== undefined;
      const end = liveSubject && result.kind === 'ended' && !byReference ? liveEndOf(result.state) : undefined;
      if (liveSubject && end)
        nats.nc.publish(liveSubject, encodeLive({ kind: 'end', end }), { headers: injectTrace(natsHeaders()) });
      if (result.kind === 'not_found')
        throw new PermanentFailure(`work ${work_id} was queued but has no WorkSubmitted event`);
      // Another worker holds the unit (this delivery outlived its ack wait): retry later, after it has moved on.
      if (result.kind === 'superseded') throw new Error(`work ${work_id} superseded: ${result.reason}`);
      metrics.ended.inc({ status: result.status });
    } finally {
      held.release();
    }
  }
  registerWorkQueueGauges(ctx.metrics.registry, nats.jsm, nats.names.workQueueStream, DISPATCH_CONSUMER);
  logger.event('info', 'dispatch workers running', {
    consumer: DISPATCH_CONSUMER,
    worker_concurrency: concurrency,
    ack_wait_ms: c.ack_wait_ms,
    deliveries_max: c.deliveries_max,
    instance: ctx.instanceId,
  });
  return {
    name: 'dispatch-workers',
    async stop() {
      await consumer.stop();
      aborts.stop();
    },
  };
}

function workerMetrics(registry: import('prom-client').Registry, aborts: AbortListener) {
  new Gauge({
    name: 'tally_dispatch_units_in_flight',
    help: 'Work units this process is working right now',
    registers: [registry],
    collect() {
      this.set(aborts.inFlight);
    },
  });
  const ended = new Counter({
    name: 'tally_work_units_ended_total',
    help: 'Work units this process saw end, by status',
    labelNames: ['status'],
    registers: [registry],
  });
  return { ended };
}
