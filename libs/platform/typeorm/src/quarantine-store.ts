// Reads and changes quarantine rows (ADR 0045) inside the runner's transactions. Markers
// are positional on SQLite, so a value used twice is passed twice. Every change
// after the first insert is conditional on what the caller last read, like the checkpoint's
// advance: a skip that finds its row gone (a retry cleared it) or a retry that finds its row
// moved (the runner skipped one more event) fails its transaction instead of losing an event.
import type { EntityManager } from 'typeorm';
import { placeholders } from './checkpoint-store.js';
import { qualifiedTable } from './data-source.js';
import { QUARANTINE_REASON_LENGTH, QUARANTINE_TABLE, QuarantinedAggregate } from './quarantine.entity.js';

/** A quarantine row changed under a transaction: another runner (or a retry) is active. Transient. */
export class QuarantineMoved extends Error {
  override readonly name = 'QuarantineMoved';
  constructor(
    readonly projection: string,
    readonly subject: string,
  ) {
    super(`the quarantine of ${subject} in ${projection} changed during the batch: is another runner of it active?`);
  }
}

/** What the runner records about the event it sets aside. */
export interface QuarantineFact {
  readonly subject: string;
  readonly aggregateId: string;
  readonly sequence: number;
  readonly eventType: string;
  readonly reason: string;
}

export async function listQuarantine(manager: EntityManager, projection?: string): Promise<QuarantinedAggregate[]> {
  return manager.find(QuarantinedAggregate, {
    ...(projection === undefined ? {} : { where: { projection } }),
    order: { projection: 'ASC', sequence: 'ASC' },
  });
}

export async function insertQuarantine(
  manager: EntityManager,
  projection: string,
  fact: QuarantineFact,
  atMs: number,
): Promise<QuarantinedAggregate> {
  const row = Object.assign(new QuarantinedAggregate(), {
    projection,
    subject: fact.subject,
    aggregateId: fact.aggregateId,
    sequence: fact.sequence,
    eventType: fact.eventType.slice(0, 128),
    reason: fact.reason.slice(0, QUARANTINE_REASON_LENGTH),
    firstSeenAtMs: atMs,
    skippedEvents: 0,
    lastSequence: fact.sequence,
    resumeSequence: fact.sequence,
  });
  await manager.insert(QuarantinedAggregate, row);
  return row;
}

/** Counts `count` more skipped events of a quarantined aggregate, the last at `lastSequence`. */
export async function noteSkipped(
  manager: EntityManager,
  projection: string,
  subject: string,
  count: number,
  lastSequence: number,
): Promise<void> {
  const p = placeholders(manager.connection);
  await changeOne(
    manager,
    projection,
    subject,
    `UPDATE ${table(manager)} SET skipped_events = skipped_events + ${p(1)}, last_sequence = ${p(2)}
     WHERE projection = ${p(3)} AND subject = ${p(4)} AND last_sequence < ${p(5)}`,
    [count, lastSequence, projection, subject, lastSequence],
  );
}

/** A retry applied the aggregate up to `nextResume` (exclusive): it resumes there. */
export async function advanceResume(
  manager: EntityManager,
  row: QuarantinedAggregate,
  nextResume: number,
): Promise<void> {
  const p = placeholders(manager.connection);
  await changeOne(
    manager,
    row.projection,
    row.subject,
    `UPDATE ${table(manager)} SET resume_sequence = ${p(1)}
     WHERE projection = ${p(2)} AND subject = ${p(3)} AND resume_sequence = ${p(4)} AND last_sequence = ${p(5)}`,
    [nextResume, row.projection, row.subject, row.resumeSequence, row.lastSequence],
  );
}

/** A retry applied every event set aside: the aggregate leaves quarantine. */
export async function clearQuarantine(manager: EntityManager, row: QuarantinedAggregate): Promise<void> {
  const p = placeholders(manager.connection);
  await changeOne(
    manager,
    row.projection,
    row.subject,
    `DELETE FROM ${table(manager)}
     WHERE projection = ${p(1)} AND subject = ${p(2)} AND resume_sequence = ${p(3)} AND last_sequence = ${p(4)}`,
    [row.projection, row.subject, row.resumeSequence, row.lastSequence],
  );
}

/** A retry stopped on another event (or the same one): the row names it and why. */
export async function repointQuarantine(
  manager: EntityManager,
  row: QuarantinedAggregate,
  fact: Pick<QuarantineFact, 'sequence' | 'eventType' | 'reason'>,
): Promise<void> {
  const p = placeholders(manager.connection);
  await changeOne(
    manager,
    row.projection,
    row.subject,
    `UPDATE ${table(manager)} SET sequence = ${p(1)}, resume_sequence = ${p(2)}, event_type = ${p(3)}, reason = ${p(4)}
     WHERE projection = ${p(5)} AND subject = ${p(6)} AND resume_sequence = ${p(7)} AND last_sequence = ${p(8)}`,
    [
      fact.sequence,
      fact.sequence,
      fact.eventType.slice(0, 128),
      fact.reason.slice(0, QUARANTINE_REASON_LENGTH),
      row.projection,
      row.subject,
      row.resumeSequence,
      row.lastSequence,
    ],
  );
}

/** Rebuild starts from empty tables, so from an empty quarantine too. */
export async function deleteQuarantine(manager: EntityManager, projection: string): Promise<void> {
  await manager.delete(QuarantinedAggregate, { projection });
}

async function changeOne(
  manager: EntityManager,
  projection: string,
  subject: string,
  sql: string,
  params: unknown[],
): Promise<void> {
  const runner = manager.queryRunner;
  if (!runner) throw new Error('quarantine changes must run inside a transaction');
  const result = await runner.query(sql, params, true);
  if (result.affected !== 1) throw new QuarantineMoved(projection, subject);
}

function table(manager: EntityManager): string {
  return qualifiedTable(manager.connection, QUARANTINE_TABLE);
}
