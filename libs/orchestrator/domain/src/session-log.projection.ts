// The session log and the messages a model is shown, derived from work-unit state. Both
// are pure functions of the events, so projections, restarts and replays agree (O4).
import { receiptOf, type WorkReceipt } from './receipt.projection.js';
import { isTerminal, type WorkStatus, type WorkUnitState } from './work-unit.state.js';
import type { ChatMessage, Purpose, RouteLeg } from './work-unit.types.js';

export type SessionEntry =
  | {
      readonly kind: 'header';
      readonly session_id: string;
      readonly work_id: string;
      readonly purpose: Purpose;
      readonly route: readonly RouteLeg[];
      readonly at: string;
    }
  | {
      readonly kind: 'message';
      readonly work_id: string;
      readonly role: string;
      readonly content: string;
      readonly partial?: true;
      readonly at: string;
    }
  | { readonly kind: 'receipt'; readonly work_id: string; readonly receipt: WorkReceipt; readonly at: string }
  | {
      readonly kind: 'turn-card';
      readonly work_id: string;
      readonly status: WorkStatus;
      readonly winning_attempt: number | null;
      readonly attempts: number;
      readonly error?: string;
      readonly at: string;
    };

const REPLY_ROLE = 'assistant';

/**
 * One unit's turn: its prompt messages, then (once it ended) the receipt, the reply it
 * produced (or the partial output an abort kept), and a turn card that closes the turn.
 * The receipt sits between the prompt and the reply because it records how the reply was obtained.
 */
export function turnEntries(state: WorkUnitState): SessionEntry[] {
  const work = state.work;
  if (!work) return [];
  const entries: SessionEntry[] = work.messages.map((m) => ({
    kind: 'message',
    work_id: work.work_id,
    role: m.role,
    content: m.content,
    at: work.at,
  }));
  if (!isTerminal(state)) return entries;
  const receipt = receiptOf(state);
  const endedAt = state.completion?.at ?? state.aborted?.at ?? state.failure?.at ?? work.at;
  if (receipt) entries.push({ kind: 'receipt', work_id: work.work_id, receipt, at: endedAt });
  if (state.completion)
    entries.push({
      kind: 'message',
      work_id: work.work_id,
      role: REPLY_ROLE,
      content: state.completion.output,
      at: endedAt,
    });
  if (state.aborted?.partial_output !== undefined) {
    entries.push({
      kind: 'message',
      work_id: work.work_id,
      role: REPLY_ROLE,
      content: state.aborted.partial_output,
      partial: true,
      at: endedAt,
    });
  }
  const error = state.failure?.error ?? state.aborted?.reason;
  entries.push({
    kind: 'turn-card',
    work_id: work.work_id,
    status: state.status,
    winning_attempt: state.completion?.winning_attempt ?? null,
    attempts: state.attempts.length,
    ...(error === undefined ? {} : { error }),
    at: endedAt,
  });
  return entries;
}

/** A session's log: one header (from its first unit), then each unit's turn in submission order. */
export function sessionLogOf(units: readonly WorkUnitState[]): SessionEntry[] {
  const ordered = units
    .filter((u): u is WorkUnitState & { work: NonNullable<WorkUnitState['work']> } => u.work !== undefined)
    .sort((a, b) =>
      a.work.at === b.work.at ? compare(a.work.work_id, b.work.work_id) : compare(a.work.at, b.work.at),
    );
  const first = ordered[0];
  if (!first) return [];
  const header: SessionEntry = {
    kind: 'header',
    session_id: first.work.session_id,
    work_id: first.work.work_id,
    purpose: first.work.purpose,
    route: first.work.route,
    at: first.work.at,
  };
  return [header, ...ordered.flatMap(turnEntries)];
}

/** The projection a model is shown: messages only. Receipts, headers and turn cards never enter it. */
export function messagesOf(entries: readonly SessionEntry[]): ChatMessage[] {
  return entries.flatMap((e) => (e.kind === 'message' ? [{ role: e.role, content: e.content }] : []));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
