// Reads for the API, from the projections only. A GET right after a 202 sees the unit
// because submit and abort answer only once the projection has committed their own
// sequence (read-your-writes, WorkSubmission), so no read falls back to the event stream.
import type {
  ProjectedEntry,
  ProjectedMessage,
  ProjectionWarning,
  WireReceipt,
  WorkScope,
} from '@tally/orchestrator-projections';
import { resolveOutput } from '@tally/orchestrator-application';
import type { OrchestratorRuntime } from '../orchestrator.runtime.js';

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

  async status(workId: string, scope: WorkScope): Promise<WorkStatusBody | undefined> {
    const row = await this.rt.reads.unit(workId, scope);
    if (!row) return undefined;
    return {
      work_id: row.work_id,
      session_id: row.session_id,
      status: row.status,
      ...(row.error === undefined ? {} : { error: row.error }),
      ...(row.output === undefined ? {} : { output: await this.wholeOutput(workId, row.output) }),
    };
  }

  /**
   * The projection keeps a long reply's prefix only (ADR 0019). A stored output as long as
   * that prefix may be one: the unit's completion then says where the whole reply is.
   * (A reply just under the inline limit costs this one extra load of the unit, and no more.)
   */
  private async wholeOutput(workId: string, projected: string): Promise<string> {
    const prefixBytes = this.rt.outputs.limits.previewBytes;
    // A UTF-8 prefix ends on a character, so up to 3 bytes short of its bound.
    if (Buffer.byteLength(projected, 'utf8') < prefixBytes - 3) return projected;
    const completion = (await this.rt.repository.load(workId)).state.completion;
    // Only the unit's own reply is completed; any other text of the same length is left as it is.
    if (completion?.output_ref === undefined || completion.output !== projected) return projected;
    return (await resolveOutput(this.rt.outputs.store, completion)).output;
  }

  async receipt(workId: string, scope: WorkScope): Promise<WireReceipt | undefined> {
    const row = await this.rt.reads.unit(workId, scope);
    return row?.receipt ? (row.receipt as WireReceipt) : undefined;
  }

  async sessionLog(
    sessionId: string,
    scope: WorkScope,
  ): Promise<{ entries: ProjectedEntry[]; warnings: ProjectionWarning[] } | undefined> {
    if (!(await this.rt.reads.sessionExists(sessionId, scope))) return undefined;
    const [entries, warnings] = await Promise.all([
      this.rt.reads.sessionLog(sessionId, SESSION_ENTRIES_MAX, scope),
      this.rt.reads.sessionWarnings(sessionId, scope),
    ]);
    return { entries, warnings };
  }

  async sessionMessages(sessionId: string, scope: WorkScope): Promise<ProjectedMessage[] | undefined> {
    if (!(await this.rt.reads.sessionExists(sessionId, scope))) return undefined;
    const rows = await this.rt.reads.sessionMessagesOfUnits(sessionId, SESSION_ENTRIES_MAX, scope);
    const out: ProjectedMessage[] = [];
    for (const { work_id, role, content } of rows)
      out.push({ role, content: role === 'assistant' ? await this.wholeOutput(work_id, content) : content });
    return out;
  }
}
