// Reads for the API. They come from the projections; a unit the projection has not
// caught up with yet is read from its events with the same pure functions, so a GET
// right after a 202 never answers 404 for work that exists.
import { receiptOf, type WorkUnitState } from '@tally/orchestrator-domain';
import type { ProjectedEntry, ProjectedMessage, ProjectionWarning } from '@tally/orchestrator-projections';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';
import { wireReceipt, type WireReceipt } from '../projections/wire-receipt.js';

export interface WorkStatusBody {
  readonly work_id: string;
  readonly session_id: string;
  readonly status: 'queued' | 'running' | 'completed' | 'failed' | 'aborted';
  readonly error?: string;
  readonly output?: string;
}

/** Most entries one session read returns; a longer session is a design limit, logged by the caller. */
export const SESSION_ENTRIES_MAX = 10_000;

export class WorkReads {
  constructor(private readonly rt: OrchestratorRuntime) {}

  async status(workId: string): Promise<WorkStatusBody | undefined> {
    const row = await this.rt.reads.unit(workId);
    if (row) return { work_id: row.work_id, session_id: row.session_id, status: row.status, ...(row.error === undefined ? {} : { error: row.error }), ...(row.output === undefined ? {} : { output: row.output }) };
    const state = await this.fromEvents(workId);
    if (!state?.work || state.status === 'absent') return undefined;
    const error = state.failure?.error ?? state.aborted?.reason;
    return {
      work_id: workId,
      session_id: state.work.session_id,
      status: state.status,
      ...(error === undefined ? {} : { error }),
      ...(state.completion ? { output: state.completion.output } : {}),
    };
  }

  async receipt(workId: string): Promise<WireReceipt | undefined> {
    const row = await this.rt.reads.unit(workId);
    if (row?.receipt) return row.receipt as WireReceipt;
    const state = await this.fromEvents(workId);
    const receipt = state ? receiptOf(state) : undefined;
    return receipt && state ? wireReceipt(receipt, state) : undefined;
  }

  async sessionLog(sessionId: string): Promise<{ entries: ProjectedEntry[]; warnings: ProjectionWarning[] } | undefined> {
    if (!(await this.rt.reads.sessionExists(sessionId))) return undefined;
    const [entries, warnings] = await Promise.all([this.rt.reads.sessionLog(sessionId, SESSION_ENTRIES_MAX), this.rt.reads.sessionWarnings(sessionId)]);
    return { entries, warnings };
  }

  async sessionMessages(sessionId: string): Promise<ProjectedMessage[] | undefined> {
    if (!(await this.rt.reads.sessionExists(sessionId))) return undefined;
    return this.rt.reads.sessionMessages(sessionId, SESSION_ENTRIES_MAX);
  }

  private async fromEvents(workId: string): Promise<WorkUnitState | undefined> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(workId)) return undefined;
    return (await this.rt.repository.load(workId)).state;
  }
}
