// The domain-backed deriver the work-unit projection runs: the same pure functions the
// workers and the API use (evolve, receiptOf, turnEntries, messagesOf), so live rows, a
// restart and a replay into an empty database all agree.
import type { StoredEvent } from '@tally/eventing';
import { toWorkEvent } from '@tally/orchestrator-application';
import {
  evolve,
  initialState,
  messagesOf,
  receiptOf,
  sessionLogOf,
  turnEntries,
  type SessionEntry,
  type WorkUnitState,
} from '@tally/orchestrator-domain';
import { wireReceipt } from './wire-receipt.js';
import type { DerivedUnit, ProjectedEntry, WorkUnitDeriver } from './work-unit.deriver.js';

const BIGINT_TAG = '$bigint';

export function saveState(state: WorkUnitState): string {
  return JSON.stringify(state, (_key, value: unknown) =>
    typeof value === 'bigint' ? { [BIGINT_TAG]: value.toString() } : value,
  );
}

export function loadState(text: string): WorkUnitState {
  return JSON.parse(text, (_key, value: unknown) => {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const tagged = (value as Record<string, unknown>)[BIGINT_TAG];
      if (typeof tagged === 'string' && Object.keys(value).length === 1) return BigInt(tagged);
    }
    return value;
  }) as WorkUnitState;
}

/** A session entry as JSON: receipts carry wire money. */
export function wireEntry(entry: SessionEntry, state: WorkUnitState): ProjectedEntry {
  return entry.kind === 'receipt'
    ? { ...entry, receipt: wireReceipt(entry.receipt, state) }
    : (entry as unknown as ProjectedEntry);
}

export function deriveUnit(state: WorkUnitState): DerivedUnit | undefined {
  const work = state.work;
  if (!work || state.status === 'absent') return undefined;
  const receipt = receiptOf(state);
  const turn = turnEntries(state);
  const header = sessionLogOf([state])[0]!;
  const error = state.failure?.error ?? state.aborted?.reason;
  return {
    work_id: work.work_id,
    session_id: work.session_id,
    tenant_id: work.tenant_id ?? 'default',
    token_fingerprint: work.token_fingerprint,
    status: state.status,
    ...(error === undefined ? {} : { error }),
    ...(state.completion ? { output: state.completion.output } : {}),
    receipt: receipt ? wireReceipt(receipt, state) : null,
    submitted_at: work.at,
    header: wireEntry(header, state),
    entries: turn.map((e) => wireEntry(e, state)),
    messages: messagesOf(turn),
  };
}

export const workUnitDeriver: WorkUnitDeriver<WorkUnitState> = {
  load: loadState,
  save: saveState,
  evolve: (state, stored: StoredEvent) => evolve(state ?? initialState(), toWorkEvent(stored)),
  derive: deriveUnit,
};
