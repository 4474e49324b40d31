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

export interface ProjectionWarning {
  readonly sequence: number;
  readonly work_id: string;
  readonly event_type: string;
  readonly message: string;
}

export class WorkProjectionReads {
  constructor(private readonly manager: () => EntityManager) {}

  async unit(workId: string): Promise<WorkUnitView | undefined> {
    const row = await this.manager().findOneBy(WorkUnitRow, { workId });
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
  async sessionLog(sessionId: string, limit: number): Promise<ProjectedEntry[]> {
    const rows = await this.manager().find(SessionEntryRow, {
      where: { sessionId },
      order: { unitSequence: 'ASC', entryIndex: 'ASC' },
      take: limit,
    });
    return rows.map((r) => JSON.parse(r.body) as ProjectedEntry);
  }

  async sessionMessages(sessionId: string, limit: number): Promise<ProjectedMessage[]> {
    const rows = await this.manager().find(SessionMessageRow, {
      where: { sessionId },
      order: { unitSequence: 'ASC', messageIndex: 'ASC' },
      take: limit,
    });
    return rows.map((r) => ({ role: r.role, content: r.content }));
  }

  async sessionExists(sessionId: string): Promise<boolean> {
    return (await this.manager().countBy(WorkUnitRow, { sessionId })) > 0;
  }

  /** Warnings for the units of a session (an empty list is the healthy case). */
  async sessionWarnings(sessionId: string): Promise<ProjectionWarning[]> {
    const rows = await this.manager()
      .createQueryBuilder(ProjectionWarningRow, 'w')
      .innerJoin(WorkUnitRow, 'u', 'u.work_id = w.work_id')
      .where('u.session_id = :sessionId', { sessionId })
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
