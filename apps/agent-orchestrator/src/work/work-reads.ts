// Reads for the API, from the projections only. A GET right after a 202 sees the unit on
// every replica: submit and abort answer once the projection has committed their own
// sequence (WorkSubmission), and a read that finds no unit asks the stream for the unit's
// last sequence and waits, bounded, for the projection to reach it before it answers 404
// (ADR 0048), which covers a submission whose own wait ran out. No read falls back to the
// event stream for its answer. A unit the projection has quarantined (ADR 0045) is refused
// with 503, not read stale, and so is a session that holds one.
import type {
  ProjectedEntry,
  ProjectedMessage,
  ProjectionWarning,
  WireReceipt,
  WorkScope,
  WorkUnitView,
} from '@tally/orchestrator-projections';
import { WORK_UNITS_PROJECTION } from '@tally/orchestrator-projections';
import { isSubjectToken } from '@tally/contracts';
import { resolveOutput } from '@tally/orchestrator-application';
import { subjectLastSequence } from '@tally/platform-jetstream';
import { quarantinedProblem } from '@tally/platform-app';
import type { QuarantineWatch } from '@tally/platform-typeorm';
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

export interface WorkReadLimits {
  readonly readWaitMs: number;
}

export class WorkReads {
  constructor(
    private readonly rt: OrchestratorRuntime,
    private readonly limits: WorkReadLimits,
    private readonly quarantine: QuarantineWatch,
  ) {}

  /** Whether the caller may see the unit, from the projection, quarantined or not (an abort needs no more). */
  async visible(workId: string, scope: WorkScope): Promise<boolean> {
    return (await this.unit(workId, scope)) !== undefined;
  }

  async status(workId: string, scope: WorkScope): Promise<WorkStatusBody | undefined> {
    const row = await this.unit(workId, scope);
    await this.refuseQuarantined(workId, row !== undefined);
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

  /** The unit's row; on a miss, read again once the projection has reached the unit's last event. */
  private async unit(workId: string, scope: WorkScope): Promise<WorkUnitView | undefined> {
    const row = await this.rt.reads.unit(workId, scope);
    if (row || !(await this.awaitUnit(workId))) return row;
    return this.rt.reads.unit(workId, scope);
  }

  /**
   * Read-your-writes on a miss: one request for the last sequence of the unit's subject, then
   * a bounded wait for the projection. False when the unit has no event (a true miss answers
   * at once) or the stream could not be asked; a bound that runs out is logged and read anyway.
   */
  private async awaitUnit(workId: string): Promise<boolean> {
    if (!isSubjectToken(workId)) return false;
    const { nats, projections, logger } = this.rt.ctx;
    let sequence: number;
    try {
      sequence = await subjectLastSequence(nats.jsm, nats.names.workEventsStream, nats.names.workEventSubject(workId));
    } catch (error) {
      logger.event('warn', 'the work stream could not be asked for a unit it may hold; the read answers without it', {
        work_id: workId,
        error: String(error),
      });
      return false;
    }
    if (sequence === 0) return false;
    const timeoutMs = this.limits.readWaitMs;
    if (!(await projections.waitFor(WORK_UNITS_PROJECTION, sequence, timeoutMs)))
      logger.event('warn', "the work projection did not reach the unit's last event in time; the read may lag it", {
        work_id: workId,
        sequence,
        timeout_ms: timeoutMs,
      });
    return true;
  }

  async receipt(workId: string, scope: WorkScope): Promise<WireReceipt | undefined> {
    const row = await this.unit(workId, scope);
    await this.refuseQuarantined(workId, row !== undefined);
    return row?.receipt ? (row.receipt as WireReceipt) : undefined;
  }

  /**
   * 503 for a quarantined unit the caller may see, or that nobody can (its first event may be
   * the one set aside); a caller who may not see an existing unit keeps its 404.
   */
  private async refuseQuarantined(workId: string, visible: boolean): Promise<void> {
    const entry = this.quarantine.find(WORK_UNITS_PROJECTION, workId);
    if (entry && (visible || !(await this.rt.reads.unit(workId)))) throw quarantinedProblem(entry, 'work unit');
  }

  /** A session's log and messages are refused while one of its units is quarantined: that turn would be stale. */
  private async refuseQuarantinedSession(sessionId: string, scope: WorkScope): Promise<void> {
    if (!this.quarantine.all().some((e) => e.projection === WORK_UNITS_PROJECTION)) return;
    for (const workId of await this.rt.reads.sessionUnitIds(sessionId, SESSION_ENTRIES_MAX, scope)) {
      const entry = this.quarantine.find(WORK_UNITS_PROJECTION, workId);
      if (entry) throw quarantinedProblem(entry, 'session');
    }
  }

  async sessionLog(
    sessionId: string,
    scope: WorkScope,
  ): Promise<{ entries: ProjectedEntry[]; warnings: ProjectionWarning[] } | undefined> {
    if (!(await this.rt.reads.sessionExists(sessionId, scope))) return undefined;
    await this.refuseQuarantinedSession(sessionId, scope);
    const [entries, warnings] = await Promise.all([
      this.rt.reads.sessionLog(sessionId, SESSION_ENTRIES_MAX, scope),
      this.rt.reads.sessionWarnings(sessionId, scope),
    ]);
    return { entries, warnings };
  }

  async sessionMessages(sessionId: string, scope: WorkScope): Promise<ProjectedMessage[] | undefined> {
    if (!(await this.rt.reads.sessionExists(sessionId, scope))) return undefined;
    await this.refuseQuarantinedSession(sessionId, scope);
    const rows = await this.rt.reads.sessionMessagesOfUnits(sessionId, SESSION_ENTRIES_MAX, scope);
    const out: ProjectedMessage[] = [];
    for (const { work_id, role, content } of rows)
      out.push({ role, content: role === 'assistant' ? await this.wholeOutput(work_id, content) : content });
    return out;
  }
}
