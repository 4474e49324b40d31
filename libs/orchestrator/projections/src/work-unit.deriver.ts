// The port between the persisted projection and the orchestrator's pure domain. The
// projection (an adapter) stores rows; how a unit's events fold into its status, receipt,
// session entries and messages is the domain's job, injected here so a live run, a
// restart and a replay all derive rows with the same pure functions.
import type { StoredEvent } from '@tally/eventing';

export type ProjectedStatus = 'queued' | 'running' | 'completed' | 'failed' | 'aborted';

/** A JSON-ready session-log entry: `{kind, ...}` exactly as the API serves it. */
export type ProjectedEntry = { readonly kind: string } & Readonly<Record<string, unknown>>;

export interface ProjectedMessage {
  readonly role: string;
  readonly content: string;
}

/** Everything the read side needs about one unit, derived from its fold state alone. */
export interface DerivedUnit {
  readonly work_id: string;
  readonly session_id: string;
  /** Who may read it: the tenant's operators, and whoever holds the token it was submitted with. */
  readonly tenant_id: string;
  readonly token_fingerprint: string;
  readonly status: ProjectedStatus;
  readonly error?: string;
  readonly output?: string;
  /** The wire receipt (JSON-ready), or null before the unit exists. */
  readonly receipt: Readonly<Record<string, unknown>> | null;
  readonly submitted_at: string;
  /** The header this unit writes when it is the first of its session. */
  readonly header: ProjectedEntry;
  /** The unit's turn: prompt messages, then receipt, reply and turn card once it ended. */
  readonly entries: readonly ProjectedEntry[];
  /** The messages a model is shown from this turn; never receipts, headers or turn cards. */
  readonly messages: readonly ProjectedMessage[];
}

/**
 * `S` is the deriver's own in-memory fold state; the projection only stores it as text
 * (`save`/`load`), so a batch folds many events without re-parsing between them.
 */
export interface WorkUnitDeriver<S = unknown> {
  load(text: string): S;
  save(state: S): string;
  /**
   * Folds one recorded event (state is undefined before the unit's first event). Throws
   * when the event breaks an invariant; the projection records a warning and keeps the
   * previous state, because a projection never throws on a fact.
   */
  evolve(state: S | undefined, event: StoredEvent): S;
  /** Undefined while the unit has not been submitted. */
  derive(state: S): DerivedUnit | undefined;
}
