// Retrying a quarantined aggregate (ADR 0045): its subject is read from where the retry
// resumes up to the last event the runner set aside (an ordered consumer filtered on that
// one subject), and applied in chunks. Each chunk commits its rows with the row's new resume
// point, and the last one deletes the row, so a crash mid-retry resumes where it stopped and
// never applies an event twice. The checkpoint does not move: it is already past every one
// of these events. A chunk that fails is split into its commits; the first that fails alone
// (after the same tries as live) becomes the aggregate's new point of quarantine.
import type { JetStreamClient } from '@nats-io/jetstream';
import type { EventRegistry } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import type { DataSource } from 'typeorm';
import { tryAlone, typesOf, type QuarantineLimits } from './aggregate-quarantine.js';
import { assertAscending, commitsOf } from './batch-trace.js';
import { EventBatchReader, UndecodableEvent, type EventReadLimits } from './event-batches.js';
import { isTransientFailure, unprojectableReason } from './projection-failures.js';
import type { Projection } from './projection.js';
import type { QuarantinedAggregate } from './quarantine.entity.js';
import { advanceResume, clearQuarantine, repointQuarantine } from './quarantine-store.js';

export interface RetryOutcome {
  readonly projection: string;
  readonly subject: string;
  readonly aggregateId: string;
  /**
   * `cleared`: every event set aside now applied, the aggregate is out of quarantine;
   * `quarantined`: an event failed again (the row names it and why);
   * `incomplete`: the stream did not deliver every event set aside, so the row stays.
   */
  readonly result: 'cleared' | 'quarantined' | 'incomplete';
  /** Events applied by this retry. */
  readonly applied: number;
}

export interface RetryContext {
  readonly js: JetStreamClient;
  readonly dataSource: DataSource;
  readonly registry: EventRegistry;
  readonly projection: Projection;
  readonly limits: EventReadLimits & QuarantineLimits;
  /** Most events applied in one retry transaction. */
  readonly batchSizeMax: number;
  /** How long the subject may stay silent before the retry gives up on the events it still expects. */
  readonly catchUpStallMs: number;
}

interface Chunk {
  readonly events: StoredEvent[];
  /** The chunk holds the aggregate's last event set aside. */
  readonly last: boolean;
  readonly undecodable?: UndecodableEvent;
}

type Step = { readonly row: QuarantinedAggregate; readonly applied: number } | RetryOutcome['result'];

export async function retryAggregate(ctx: RetryContext, row: QuarantinedAggregate): Promise<RetryOutcome> {
  const reader = await EventBatchReader.open(ctx.js, {
    stream: ctx.projection.stream,
    filterSubject: row.subject,
    startSequence: row.resumeSequence,
    registry: ctx.registry,
    prefetchMessagesMax: ctx.limits.prefetchMessagesMax,
    idleHeartbeatMs: ctx.limits.idleHeartbeatMs,
    pullExpiresMs: ctx.limits.pullExpiresMs,
  });
  const done = (result: RetryOutcome['result'], applied: number): RetryOutcome => ({
    projection: row.projection,
    subject: row.subject,
    aggregateId: row.aggregateId,
    result,
    applied,
  });
  let state = row;
  let applied = 0;
  try {
    let chunk = await readChunk(ctx, reader, row.lastSequence);
    for (;;) {
      if (chunk.events.length === 0) {
        if (!chunk.undecodable) return done('incomplete', applied);
        await repoint(ctx, state, undecodableFact(chunk.undecodable));
        return done('quarantined', applied);
      }
      const next = chunk.last ? undefined : await readChunk(ctx, reader, row.lastSequence);
      const nextResume = next?.events[0]?.sequence ?? next?.undecodable?.sequence;
      if (next && nextResume === undefined) return done('incomplete', applied);
      const step = await applyChunk(ctx, state, chunk.events, nextResume);
      if (typeof step === 'string') return done(step, applied);
      applied += step.applied;
      if (!next) return done('cleared', applied);
      state = step.row;
      chunk = next;
    }
  } finally {
    await reader.close();
  }
}

/** Up to batchSizeMax events of the subject, none past `lastSequence`; a decode failure ends the chunk. */
async function readChunk(ctx: RetryContext, reader: EventBatchReader, lastSequence: number): Promise<Chunk> {
  try {
    const batch = await reader.read({
      limit: ctx.batchSizeMax,
      batchWaitMs: 0,
      firstWaitMs: ctx.catchUpStallMs,
      stop: new Promise<void>(() => undefined),
      stopAtEnd: true,
    });
    const events = batch.filter((e) => e.sequence <= lastSequence);
    const last = events.length < batch.length || events.at(-1)?.sequence === lastSequence;
    return { events, last };
  } catch (error) {
    if (error instanceof UndecodableEvent && error.sequence <= lastSequence)
      return { events: [], last: false, undecodable: error };
    throw error;
  }
}

/** One transaction for the chunk; when it fails for a reason of its own, commit by commit. */
async function applyChunk(
  ctx: RetryContext,
  row: QuarantinedAggregate,
  events: StoredEvent[],
  nextResume: number | undefined,
): Promise<Step> {
  try {
    return await commitChunk(ctx, row, events, nextResume);
  } catch (error) {
    if (isTransientFailure(error)) throw error;
  }
  const commits = commitsOf(events);
  let state = row;
  let applied = 0;
  for (let i = 0; i < commits.length; i++) {
    const commit = commits[i]!;
    const resumeAfter = commits[i + 1]?.[0]!.sequence ?? nextResume;
    const tried = await tryAlone(commit, (c) => commitChunk(ctx, state, c, resumeAfter), ctx.limits);
    if (!tried.ok) {
      const reason = unprojectableReason(tried.failure);
      await repoint(ctx, state, { sequence: commit[0]!.sequence, eventType: typesOf(commit), reason });
      return 'quarantined';
    }
    state = tried.value.row;
    applied += tried.value.applied;
  }
  return { row: state, applied };
}

async function commitChunk(
  ctx: RetryContext,
  row: QuarantinedAggregate,
  events: StoredEvent[],
  nextResume: number | undefined,
): Promise<{ row: QuarantinedAggregate; applied: number }> {
  assertAscending(events);
  await ctx.dataSource.transaction(async (manager) => {
    await ctx.projection.apply(manager, events);
    if (nextResume === undefined) await clearQuarantine(manager, row);
    else await advanceResume(manager, row, nextResume);
  });
  return { row: { ...row, resumeSequence: nextResume ?? row.resumeSequence }, applied: events.length };
}

async function repoint(
  ctx: RetryContext,
  row: QuarantinedAggregate,
  fact: { sequence: number; eventType: string; reason: string },
): Promise<void> {
  await ctx.dataSource.transaction((manager) => repointQuarantine(manager, row, fact));
}

export function undecodableFact(error: UndecodableEvent): { sequence: number; eventType: string; reason: string } {
  const named = [...new Set(error.fields)].slice(0, 8);
  const fields = named.length > 0 ? named.join(', ') : 'the envelope';
  return { sequence: error.sequence, eventType: error.eventType, reason: `UndecodableEvent: fields ${fields}` };
}
