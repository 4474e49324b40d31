// The replay side of the checker: every tree folded from its stored events alone, commit by
// commit, exactly as a replay from scratch would (fromStored, then the domain's evolve), with
// the domain's own invariants asserted on each result. A replica's in-memory tree must equal
// this fold at the replica's sequence: cheaply after each step (the figures, the counts and
// the holds the new commits touched) and in full at the end of the run.
import {
  assertTreeInvariants,
  evolve,
  initialState,
  PersistentMap,
  type RecordedBudgetEvent,
  type TreeState,
} from '@tally/budget-domain';
import { fromStored } from '@tally/budget-application';
import type { SimMessage } from '../store/sim-stream.js';

/** The domain's whole-tree invariants walk every grant and period: asserted on every this-many commits of a tree, and at the end. */
const FULL_INVARIANTS_EVERY = 32;
/**
 * Snapshots kept per tree. A replica's tree changes only when it appends or catches up, so
 * its sequence is at most a few commits behind the stream when it is compared; older
 * snapshots would only make garbage.
 */
const SNAPSHOTS_MAX = 256;

interface Snapshot {
  readonly seq: number;
  readonly state: TreeState;
  quick?: string;
}

export class ReferenceFold {
  private readonly trees = new Map<string, Snapshot[]>();
  private readonly commits = new Map<string, number>();

  constructor(private readonly violation: (detail: string) => void) {}

  /** Folds one commit of `rootId`; a replay that breaks an invariant is a violation (the ledger is wrong). */
  apply(
    rootId: string,
    message: SimMessage,
    recorded: readonly RecordedBudgetEvent[] = message.events.map(fromStored),
  ): TreeState | undefined {
    const history = this.trees.get(rootId) ?? [];
    this.trees.set(rootId, history);
    let state = history.at(-1)?.state ?? initialState();
    try {
      for (const event of recorded) state = evolve(state, event);
      if ((this.commits.get(rootId) ?? 0) % FULL_INVARIANTS_EVERY === 0) assertTreeInvariants(state);
    } catch (error) {
      this.violation(`replaying commit #${message.seq} of ${rootId} fails: ${(error as Error).message}`);
      return undefined;
    }
    history.push({ seq: message.seq, state });
    if (history.length > SNAPSHOTS_MAX * 2) history.splice(0, history.length - SNAPSHOTS_MAX);
    this.commits.set(rootId, (this.commits.get(rootId) ?? 0) + 1);
    return state;
  }

  /** The domain's invariants on every tree as it stands now. */
  assertAll(): void {
    for (const [root, history] of this.trees) {
      try {
        const state = history.at(-1)?.state;
        if (state) assertTreeInvariants(state);
      } catch (error) {
        this.violation(`the replay of ${root} breaks an invariant: ${(error as Error).message}`);
      }
    }
  }

  roots(): string[] {
    return [...this.trees.keys()];
  }

  latest(rootId: string): TreeState | undefined {
    return this.trees.get(rootId)?.at(-1)?.state;
  }

  /** The tree as of stream sequence `seq`: after its last commit at or before it. */
  at(rootId: string, seq: number): Snapshot | undefined {
    const history = this.trees.get(rootId);
    if (!history) return undefined;
    let lo = 0;
    let hi = history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (history[mid]!.seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? undefined : history[lo - 1];
  }

  /** The cheap comparison of a replica's tree with the fold at its sequence; a message when they differ. */
  compareQuick(
    rootId: string,
    replica: { state: TreeState; lastSequence: number },
    touched: readonly string[],
  ): string | undefined {
    const snapshot = this.at(rootId, replica.lastSequence);
    // Older than the snapshots kept: the full comparison at the end covers it.
    if (!snapshot) return undefined;
    snapshot.quick ??= quickSummary(snapshot.state);
    const mine = quickSummary(replica.state);
    if (mine !== snapshot.quick)
      return `figures differ at #${replica.lastSequence}: replica ${mine} replay ${snapshot.quick}`;
    for (const holdId of touched) {
      const at = difference(replica.state.holds.get(holdId), snapshot.state.holds.get(holdId), `holds.${holdId}`);
      if (at) return `hold ${holdId} differs at #${replica.lastSequence}: ${at}`;
    }
    return undefined;
  }

  /** The full comparison: every map of the tree, entry by entry. */
  compareFull(rootId: string, replica: { state: TreeState; lastSequence: number }): string | undefined {
    const latest = this.latest(rootId) ?? initialState();
    // At the end every live replica has caught up (the final read), so the latest replay is its match.
    const reference =
      latest.last_commit_index === replica.state.last_commit_index
        ? latest
        : this.at(rootId, replica.lastSequence)?.state;
    if (!reference) return `tree ${rootId} at #${replica.lastSequence} is older than the replays kept`;
    const at = difference(replica.state, reference, 'tree');
    return at && `tree ${rootId} at #${replica.lastSequence} differs from its replay: ${at}`;
  }
}

/** Figures and sizes: everything a step changes that is cheap to read (the holds it touched are compared apart). */
function quickSummary(state: TreeState): string {
  let out = `c${state.last_commit_index}/${state.last_commit_position}`;
  for (const [key, u] of state.usage)
    out += ` ${key}=${u.invocation_count}/${u.exposed_cost_units}/${u.realized_cost_units}/${u.overrun_cost_units}`;
  for (const [key, s] of state.spend) out += ` ${key}:${s.invocation_count}/${s.committed_units}/${s.overrun_units}`;
  let resolved = 0;
  for (const a of state.ambiguities.values()) if (a.resolution !== undefined) resolved++;
  out += ` h${state.holds.size} r${state.receipts.size} cr${state.command_receipts.size} n${state.nonces.size}`;
  out += ` a${state.ambiguities.size}/${resolved} al${state.alerts.size} p${state.period_usage.size}`;
  out += ` q${state.requests.size}/${state.preflights.size} w${state.windows.size} rc${state.receipt_chains.size}`;
  return out;
}

const byKey = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/** Where two state values differ (a path and both sides), or undefined when they are equal. */
export function difference(a: unknown, b: unknown, path: string): string | undefined {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null)
    return `${path}: ${describeValue(a)} vs ${describeValue(b)}`;
  if (a instanceof PersistentMap || a instanceof Map || b instanceof PersistentMap || b instanceof Map)
    return mapDifference(a as ReadonlyMap<string, unknown>, b as ReadonlyMap<string, unknown>, path);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return `${path}: length differs`;
    for (let i = 0; i < a.length; i++) {
      const at = difference(a[i], b[i], `${path}[${i}]`);
      if (at) return at;
    }
    return undefined;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  if ('log' in ra && 'head' in ra) return canonical(ra) === canonical(rb) ? undefined : `${path}: windows differ`;
  for (const key of new Set([...Object.keys(ra), ...Object.keys(rb)])) {
    if (ra[key] === undefined && rb[key] === undefined) continue;
    const at = difference(ra[key], rb[key], `${path}.${key}`);
    if (at) return at;
  }
  return undefined;
}

function mapDifference(
  a: ReadonlyMap<string, unknown>,
  b: ReadonlyMap<string, unknown>,
  path: string,
): string | undefined {
  if (a.size !== b.size) return `${path}: ${a.size} entries vs ${b.size}`;
  for (const [key, value] of a.entries()) {
    const at = difference(value, b.get(key), `${path}.${key}`);
    if (at) return at;
  }
  return undefined;
}

function describeValue(value: unknown): string {
  return typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value)).slice(0, 200);
}

/** A stable text of any state value: maps by sorted key, bigints marked, a rate window by its live entries. */
export function canonical(value: unknown): string {
  return JSON.stringify(plain(value));
}

function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return `${value}n`;
  if (value === undefined) return null;
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof PersistentMap || value instanceof Map)
    return [...(value as Map<string, unknown>).entries()].sort(byKey).map(([k, v]) => [k, plain(v)]);
  if (Array.isArray(value)) return value.map(plain);
  const record = value as Record<string, unknown>;
  if ('log' in record && 'head' in record && 'tail' in record) return windowOf(record);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(record).sort()) if (record[key] !== undefined) out[key] = plain(record[key]);
  return out;
}

function windowOf(window: Record<string, unknown>): unknown {
  const log = window['log'] as { offset: number; at: number[]; holds: string[] };
  const entries: unknown[] = [];
  for (let seq = window['head'] as number; seq < (window['tail'] as number); seq++)
    entries.push([log.at[seq - log.offset], log.holds[seq - log.offset]]);
  return {
    head: window['head'],
    tail: window['tail'],
    tokens: window['tokens'],
    open: window['open'],
    last: window['last_at_ms'],
    entries,
  };
}
