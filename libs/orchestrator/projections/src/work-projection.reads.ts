// Reads of the orchestrator's read model, shaped as the public API serves them.
import type { EntityManager } from 'typeorm';
import { ProjectionWarningRow, SessionEntryRow, SessionMessageRow, WorkUnitRow } from './work-projection.entities.js';
import type { ProjectedEntry, ProjectedMessage, ProjectedStatus } from './work-unit.deriver.js';

export interface WorkUnitView {
  readonly work_id: string;
  readonly session_id: string;
  readonly status: ProjectedStatus;
  readonly error?: string;
  readonly output?: string;
  readonly receipt: Record<string, unknown> | null;
  readonly last_sequence: number;
}

/**
 * What a read is restricted to, as part of the query: a tenant (its operators), and a token
 * fingerprint (the capability token the units were submitted with). Empty reads everything.
 */
export interface WorkScope {
  readonly tenant_id?: string;
  readonly token_fingerprint?: string;
}

function unitWhere(scope: WorkScope): Partial<Pick<WorkUnitRow, 'tenantId' | 'tokenFingerprint'>> {
  return {
    ...(scope.tenant_id === undefined ? {} : { tenantId: scope.tenant_id }),
    ...(scope.token_fingerprint === undefined ? {} : { tokenFingerprint: scope.token_fingerprint }),
  };
}

/** The same scope as SQL over the unit row aliased `u`. */
function scopeSql(scope: WorkScope): { sql: string; params: Record<string, string> } {
  const parts: string[] = ['1 = 1'];
  const params: Record<string, string> = {};
  if (scope.tenant_id !== undefined) {
    parts.push('u.tenant_id = :tenantId');
    params['tenantId'] = scope.tenant_id;
  }
  if (scope.token_fingerprint !== undefined) {
    parts.push('u.token_fingerprint = :fingerprint');
    params['fingerprint'] = scope.token_fingerprint;
  }
  return { sql: parts.join(' AND '), params };
}

export interface ProjectionWarning {
  readonly sequence: number;
  readonly work_id: string;
  readonly event_type: string;
  readonly message: string;
}

export class WorkProjectionReads {
  constructor(private readonly manager: () => EntityManager) {}

  async unit(workId: string, scope: WorkScope = {}): Promise<WorkUnitView | undefined> {
    const row = await this.manager().findOneBy(WorkUnitRow, { workId, ...unitWhere(scope) });
    if (!row) return undefined;
    return {
      work_id: row.workId,
      session_id: row.sessionId,
      status: row.status as ProjectedStatus,
      ...(row.error === null ? {} : { error: row.error }),
      ...(row.output === null ? {} : { output: row.output }),
      receipt: row.receipt === null ? null : (JSON.parse(row.receipt) as Record<string, unknown>),
      last_sequence: row.lastSequence,
    };
  }

  /** The session log in commit order: header, then each unit's turn. Bounded by `limit` entries. */
  async sessionLog(sessionId: string, limit: number, scope: WorkScope = {}): Promise<ProjectedEntry[]> {
    const { sql, params } = scopeSql(scope);
    const rows = await this.manager()
      .createQueryBuilder(SessionEntryRow, 'e')
      .innerJoin(WorkUnitRow, 'u', 'u.work_id = e.work_id')
      .where('e.session_id = :sessionId', { sessionId })
      .andWhere(sql, params)
      .orderBy('e.unit_sequence', 'ASC')
      .addOrderBy('e.entry_index', 'ASC')
      .limit(limit)
      .getMany();
    return rows.map((r) => JSON.parse(r.body) as ProjectedEntry);
  }

  async sessionMessages(sessionId: string, limit: number, scope: WorkScope = {}): Promise<ProjectedMessage[]> {
    return (await this.sessionMessagesOfUnits(sessionId, limit, scope)).map(({ role, content }) => ({ role, content }));
  }

  /** The session's messages with the unit each came from, for a reader that completes long replies (ADR 0019). */
  async sessionMessagesOfUnits(
    sessionId: string,
    limit: number,
    scope: WorkScope = {},
  ): Promise<(ProjectedMessage & { readonly work_id: string })[]> {
    const { sql, params } = scopeSql(scope);
    const rows = await this.manager()
      .createQueryBuilder(SessionMessageRow, 'm')
      .innerJoin(WorkUnitRow, 'u', 'u.work_id = m.work_id')
      .where('m.session_id = :sessionId', { sessionId })
      .andWhere(sql, params)
      .orderBy('m.unit_sequence', 'ASC')
      .addOrderBy('m.message_index', 'ASC')
      .limit(limit)
      .getMany();
    return rows.map((r) => ({ role: r.role, content: r.content, work_id: r.workId }));
  }

  /** The units of a session the caller may read, at most `limit` (a session read checks them for quarantine). */
  async sessionUnitIds(sessionId: string, limit: number, scope: WorkScope = {}): Promise<string[]> {
    const rows = await this.manager().find(WorkUnitRow, {
      where: { sessionId, ...unitWhere(scope) },
      select: { workId: true },
      order: { submittedSequence: 'ASC' },
      take: limit,
    });
    return rows.map((r) => r.workId);
  }

  async sessionExists(sessionId: string, scope: WorkScope = {}): Promise<boolean> {
    return (await this.manager().countBy(WorkUnitRow, { sessionId, ...unitWhere(scope) })) > 0;
  }

  /** Warnings for the units of a session (an empty list is the healthy case). */
  async sessionWarnings(sessionId: string, scope: WorkScope = {}): Promise<ProjectionWarning[]> {
    const { sql, params } = scopeSql(scope);
    const rows = await this.manager()
      .createQueryBuilder(ProjectionWarningRow, 'w')
      .innerJoin(WorkUnitRow, 'u', 'u.work_id = w.work_id')
      .where('u.session_id = :sessionId', { sessionId })
      .andWhere(sql, params)
      .orderBy('w.sequence', 'ASC')
      .getMany();
    return rows.map((r) => ({ sequence: r.sequence, work_id: r.workId, event_type: r.eventType, message: r.message }));
  }

  async allWarnings(limit: number): Promise<ProjectionWarning[]> {
    const rows = await this.manager().find(ProjectionWarningRow, { order: { sequence: 'ASC' }, take: limit });
    return rows.map((r) => ({ sequence: r.sequence, work_id: r.workId, event_type: r.eventType, message: r.message }));
  }

  /** Units still queued, oldest first, for re-enqueueing. */
  async queuedUnits(limit: number): Promise<{ work_id: string; submitted_at: string }[]> {
    const rows = await this.manager().find(WorkUnitRow, {
      where: { status: 'queued' },
      order: { submittedSequence: 'ASC' },
      take: limit,
      select: { workId: true, submittedAt: true },
    });
    return rows.map((r) => ({ work_id: r.workId, submitted_at: r.submittedAt }));
  }
}
