// The API-facing use cases of work units: submit (idempotent by work id), request an abort,
// and read the status, receipt, session log and model-visible messages. Reads fold the
// unit's events with the same pure functions a replay uses, so they agree with it.
import {
  messagesOf,
  receiptOf,
  sessionLogOf,
  type ChatMessage,
  type Rejection,
  type SessionEntry,
  type SubmitWork,
  type WorkReceipt,
  type WorkStatus,
  type WorkUnitState,
} from '@tally/orchestrator-domain';
import { tokenFingerprint } from './credential.js';
import type { Clock } from './ports.js';
import type { WorkUnitRepository } from './work-unit.repository.js';

/** As submitted: with the token, which is fingerprinted here and never passed to the domain. */
export type SubmitWorkInput = Omit<SubmitWork, 'type' | 'command_id' | 'at' | 'token_fingerprint'> & {
  readonly token: string;
};

/**
 * `sequence` is the stream sequence the unit stands at after the command: the last event it
 * appended, or the unit's last event when the command changed nothing (a re-sent submission).
 * A reader waits for its projection to reach it to read its own write.
 */
export type CommandResult =
  { readonly ok: true; readonly sequence: number } | { readonly ok: false; readonly rejection: Rejection };

/** A submission's result also says where the unit stands: a re-sent one may find it already ended. */
export type SubmitResult =
  | { readonly ok: true; readonly sequence: number; readonly state: WorkUnitState }
  | { readonly ok: false; readonly rejection: Rejection };

export interface WorkStatusView {
  readonly work_id: string;
  readonly status: Exclude<WorkStatus, 'absent'>;
  readonly error?: string;
  readonly output?: string;
}

export class WorkUnits {
  constructor(
    private readonly repository: WorkUnitRepository,
    private readonly clock: Clock,
    /** Bound on reload-and-retry when a command meets a concurrent append. */
    private readonly conflictRetriesMax: number,
  ) {}

  /**
   * The command id is derived from the work id, so a re-sent submission dedupes in the stream
   * too. Most submissions are new, so the first try does not read the unit.
   */
  async submit(input: SubmitWorkInput): Promise<SubmitResult> {
    const { token, ...work } = input;
    const command: SubmitWork = {
      ...work,
      token_fingerprint: token.length > 0 ? tokenFingerprint(token) : '',
      type: 'SubmitWork',
      command_id: `${input.work_id}:submit`,
      at: this.now(),
    };
    const outcome = await this.repository.execute(input.work_id, command, this.conflictRetriesMax, true);
    return outcome.kind === 'rejected'
      ? { ok: false, rejection: outcome.rejection }
      : { ok: true, sequence: outcome.view.lastSequence, state: outcome.view.state };
  }

  /** Records the abort; the worker that owns the unit sees it and cancels the call in flight. */
  async requestAbort(workId: string, reason: string, commandId: string): Promise<CommandResult> {
    const outcome = await this.repository.execute(
      workId,
      { type: 'RequestAbort', command_id: commandId, at: this.now(), reason },
      this.conflictRetriesMax,
    );
    return outcome.kind === 'rejected'
      ? { ok: false, rejection: outcome.rejection }
      : { ok: true, sequence: outcome.view.lastSequence };
  }

  async status(workId: string): Promise<WorkStatusView | undefined> {
    const { state } = await this.repository.load(workId);
    if (!state.work || state.status === 'absent') return undefined;
    const error = state.failure?.error ?? state.aborted?.reason;
    return {
      work_id: workId,
      status: state.status,
      ...(error === undefined ? {} : { error }),
      ...(state.completion ? { output: state.completion.output } : {}),
    };
  }

  async receipt(workId: string): Promise<WorkReceipt | undefined> {
    return receiptOf((await this.repository.load(workId)).state);
  }

  /** The log of a session made of these units (a projection indexes units by session). */
  async sessionLog(workIds: readonly string[]): Promise<SessionEntry[]> {
    const states = await Promise.all(workIds.map(async (id) => (await this.repository.load(id)).state));
    return sessionLogOf(states);
  }

  async messages(workIds: readonly string[]): Promise<ChatMessage[]> {
    return messagesOf(await this.sessionLog(workIds));
  }

  private now(): string {
    return new Date(this.clock.nowMs()).toISOString();
  }
}
