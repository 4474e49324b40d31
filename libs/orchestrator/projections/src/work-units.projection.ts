// The work-unit projection: folds each batch of work events into the unit rows (evolving
// from the stored state), rewrites each touched unit's turn in the session log and the
// messages table, and opens a session with a header from its first unit. It never
// throws on a recorded event: an event that breaks the fold becomes a warning row, which
// a replay reproduces exactly.
import type { StoredEvent } from '@tally/eventing';
import { bulkInsert, bulkUpsert, type Projection } from '@tally/platform-typeorm';
import { In, type EntityManager } from 'typeorm';
import type { DerivedUnit, WorkUnitDeriver } from './work-unit.deriver.js';
import {
  PROJECTION_WARNING_TABLE,
  ProjectionWarningRow,
  SESSION_ENTRY_TABLE,
  SESSION_MESSAGE_TABLE,
  SessionEntryRow,
  SessionMessageRow,
  WORK_UNIT_TABLE,
  WorkUnitRow,
} from './work-projection.entities.js';

export const WORK_UNITS_PROJECTION = 'orchestrator-work-units';
/** Statement size bound for multi-row writes; both databases' parameter limits sit far above it. */
const ROWS_PER_STATEMENT_MAX = 500;
/** Ids per IN (...) list, well below SQLite's and PostgreSQL's parameter limits. */
const IDS_PER_QUERY_MAX = 1_000;

export interface WorkUnitsProjectionOptions {
  readonly stream: string;
  readonly filterSubject: string;
  readonly deriver: WorkUnitDeriver<unknown>;
}

interface Derived {
  readonly unit: DerivedUnit;
  /** The unit's submitted sequence (its place in the session). */
  readonly sequence: number;
  readonly state: string;
  readonly lastSequence: number;
  /** The unit had a row before this batch, so its session's header was settled then. */
  readonly known: boolean;
}

interface Touched {
  state: unknown;
  submittedSequence: number | undefined;
  lastSequence: number;
  readonly known: boolean;
}

export function workUnitsProjection(options: WorkUnitsProjectionOptions): Projection {
  return {
    name: WORK_UNITS_PROJECTION,
    stream: options.stream,
    filterSubject: options.filterSubject,
    tables: [WORK_UNIT_TABLE, SESSION_ENTRY_TABLE, SESSION_MESSAGE_TABLE, PROJECTION_WARNING_TABLE],
    apply: (manager, events) => applyBatch(manager, events, options.deriver),
  };
}

async function applyBatch(
  manager: EntityManager,
  events: readonly StoredEvent[],
  deriver: WorkUnitDeriver<unknown>,
): Promise<void> {
  const touched = await loadTouched(manager, events, deriver);
  const warnings: ProjectionWarningRow[] = [];
  for (const stored of events) {
    const unit = touched.get(stored.event.aggregateId)!;
    try {
      unit.state = deriver.evolve(unit.state, stored);
      if (unit.submittedSequence === undefined && stored.event.type === 'WorkSubmitted')
        unit.submittedSequence = stored.sequence;
      unit.lastSequence = stored.sequence;
    } catch (error) {
      warnings.push(warningRow(stored, error));
    }
  }
  const derived: Derived[] = [];
  for (const t of touched.values()) {
    const unit = t.state === undefined ? undefined : deriver.derive(t.state);
    if (unit && t.submittedSequence !== undefined)
      derived.push({
        unit,
        sequence: t.submittedSequence,
        state: deriver.save(t.state),
        lastSequence: t.lastSequence,
        known: t.known,
      });
  }
  await writeUnits(manager, derived);
  await writeTurns(manager, derived);
  // Only a unit projected for the first time can open a session; the others were looked at then.
  await writeHeaders(
    manager,
    derived.filter((d) => !d.known),
  );
  if (warnings.length > 0)
    await bulkUpsert(manager, ProjectionWarningRow, warnings, {
      conflictColumns: ['sequence'],
      updateColumns: ['message'],
      rowsPerStatementMax: ROWS_PER_STATEMENT_MAX,
    });
}

async function loadTouched(
  manager: EntityManager,
  events: readonly StoredEvent[],
  deriver: WorkUnitDeriver<unknown>,
): Promise<Map<string, Touched>> {
  const ids = [...new Set(events.map((e) => e.event.aggregateId))];
  const rows: WorkUnitRow[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY_MAX)
    rows.push(...(await manager.findBy(WorkUnitRow, { workId: In(ids.slice(i, i + IDS_PER_QUERY_MAX)) })));
  const byId = new Map(rows.map((r) => [r.workId, r]));
  return new Map(
    ids.map((id) => {
      const row = byId.get(id);
      return [
        id,
        {
          state: row ? deriver.load(row.state) : undefined,
          submittedSequence: row?.submittedSequence,
          lastSequence: row?.lastSequence ?? 0,
          known: row !== undefined,
        },
      ];
    }),
  );
}

function warningRow(stored: StoredEvent, error: unknown): ProjectionWarningRow {
  return Object.assign(new ProjectionWarningRow(), {
    sequence: stored.sequence,
    workId: stored.event.aggregateId.slice(0, 64),
    eventType: stored.event.type.slice(0, 64),
    message: error instanceof Error ? error.message : String(error),
  });
}

async function writeUnits(manager: EntityManager, derived: readonly Derived[]): Promise<void> {
  const rows = derived.map(({ unit, sequence, state, lastSequence }) =>
    Object.assign(new WorkUnitRow(), {
      workId: unit.work_id,
      sessionId: unit.session_id,
      tenantId: unit.tenant_id,
      tokenFingerprint: unit.token_fingerprint,
      status: unit.status,
      error: unit.error ?? null,
      output: unit.output ?? null,
      receipt: unit.receipt === null ? null : JSON.stringify(unit.receipt),
      submittedSequence: sequence,
      submittedAt: unit.submitted_at,
      lastSequence,
      state,
    }),
  );
  if (rows.length === 0) return;
  await bulkUpsert(manager, WorkUnitRow, rows, {
    conflictColumns: ['workId'],
    updateColumns: [
      'sessionId',
      'tenantId',
      'tokenFingerprint',
      'status',
      'error',
      'output',
      'receipt',
      'submittedSequence',
      'submittedAt',
      'lastSequence',
      'state',
    ],
    rowsPerStatementMax: ROWS_PER_STATEMENT_MAX,
  });
}

/** A unit's turn is rewritten whole: its entries are a pure function of its state. */
async function writeTurns(
  manager: EntityManager,
  derived: readonly { unit: DerivedUnit; sequence: number }[],
): Promise<void> {
  const ids = derived.map((d) => d.unit.work_id);
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY_MAX) {
    const chunk = ids.slice(i, i + IDS_PER_QUERY_MAX);
    // The header row (unit_sequence 0) shares the work id of the unit that opened the session; keep it.
    await manager
      .createQueryBuilder()
      .delete()
      .from(SessionEntryRow)
      .where('work_id IN (:...ids)', { ids: chunk })
      .andWhere('unit_sequence > 0')
      .execute();
    await manager
      .createQueryBuilder()
      .delete()
      .from(SessionMessageRow)
      .where('work_id IN (:...ids)', { ids: chunk })
      .execute();
  }
  const entries = derived.flatMap(({ unit, sequence }) =>
    unit.entries.map((entry, index) =>
      Object.assign(new SessionEntryRow(), {
        sessionId: unit.session_id,
        unitSequence: sequence,
        entryIndex: index,
        workId: unit.work_id,
        kind: entry.kind,
        body: JSON.stringify(entry),
      }),
    ),
  );
  const messages = derived.flatMap(({ unit, sequence }) =>
    unit.messages.map((m, index) =>
      Object.assign(new SessionMessageRow(), {
        sessionId: unit.session_id,
        unitSequence: sequence,
        messageIndex: index,
        workId: unit.work_id,
        role: m.role,
        content: m.content,
      }),
    ),
  );
  await bulkInsert(manager, SessionEntryRow, entries, { rowsPerStatementMax: ROWS_PER_STATEMENT_MAX });
  await bulkInsert(manager, SessionMessageRow, messages, { rowsPerStatementMax: ROWS_PER_STATEMENT_MAX });
}

/**
 * The session's first unit (the lowest submitted sequence) writes its header. Sequences only
 * grow, so in stream order a later unit never replaces it; but a unit quarantined and then
 * retried (ADR 0045) is applied after later units of its session, and its header must then
 * replace theirs, so that the rows equal those of a replay in stream order.
 */
async function writeHeaders(
  manager: EntityManager,
  derived: readonly { unit: DerivedUnit; sequence: number }[],
): Promise<void> {
  const first = new Map<string, { unit: DerivedUnit; sequence: number }>();
  for (const d of derived) {
    const known = first.get(d.unit.session_id);
    if (!known || d.sequence < known.sequence) first.set(d.unit.session_id, d);
  }
  if (first.size === 0) return;
  const openers = await headerOpeners(manager, [...first.keys()]);
  const headers = [...first.values()]
    .filter((d) => {
      const opener = openers.get(d.unit.session_id);
      return opener === undefined || d.sequence < opener;
    })
    .map(({ unit }) =>
      Object.assign(new SessionEntryRow(), {
        sessionId: unit.session_id,
        unitSequence: 0,
        entryIndex: 0,
        workId: unit.work_id,
        kind: unit.header.kind,
        body: JSON.stringify(unit.header),
      }),
    );
  await bulkUpsert(manager, SessionEntryRow, headers, {
    conflictColumns: ['sessionId', 'unitSequence', 'entryIndex'],
    updateColumns: ['workId', 'kind', 'body'],
    rowsPerStatementMax: ROWS_PER_STATEMENT_MAX,
  });
}

/** Per session that has a header: the submitted sequence of the unit that wrote it. */
async function headerOpeners(manager: EntityManager, sessions: readonly string[]): Promise<Map<string, number>> {
  const header = new Map<string, string>();
  for (let i = 0; i < sessions.length; i += IDS_PER_QUERY_MAX) {
    const rows = await manager.findBy(SessionEntryRow, {
      sessionId: In(sessions.slice(i, i + IDS_PER_QUERY_MAX)),
      unitSequence: 0,
    });
    for (const row of rows) header.set(row.sessionId, row.workId);
  }
  const sequences = new Map<string, number>();
  const ids = [...new Set(header.values())];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY_MAX) {
    const units = await manager.find(WorkUnitRow, {
      where: { workId: In(ids.slice(i, i + IDS_PER_QUERY_MAX)) },
      select: { workId: true, submittedSequence: true },
    });
    for (const unit of units) sequences.set(unit.workId, unit.submittedSequence);
  }
  // A header whose unit has no row cannot be placed: keep it (0 sorts before every unit).
  return new Map([...header].map(([session, workId]) => [session, sequences.get(workId) ?? 0]));
}
