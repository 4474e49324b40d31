// Findings of the simulator that are reported and not fixed yet (ADR 0057). A violation is
// put down to one only when the ledger shows that finding's mechanism, not merely its
// symptom: a hold left captured whose command was answered by another run's denial is the
// lost receipt race, a hold left captured for other reasons is a new failure. Runs count
// known findings apart, so the fixed seeds in CI fail on anything new while these wait.
import type { Hold, TreeState } from '@tally/budget-domain';
import type { World } from '../world/world.js';

export interface KnownFinding {
  readonly id: string;
  /** What goes wrong, in one line, for the report. */
  readonly summary: string;
  /** A seed and fault-phase length that reproduce it (see test/sim/findings.spec.ts). */
  readonly seed: number;
  readonly steps: number;
  /** Whether `violation`, in `world` as the run left it, is this finding. */
  matches(violation: string, world: World): boolean;
}

const HOLD = /hold (\S+) /;
const holdIn = (violation: string) => HOLD.exec(violation)?.[1];

function holdOf(world: World, holdId: string | undefined): { hold: Hold; state: TreeState } | undefined {
  if (holdId === undefined) return undefined;
  const root = world.checker.shadow.holds.get(holdId)?.root_id;
  const state = root === undefined ? undefined : world.checker.fold.latest(root);
  const hold = state?.holds.get(holdId);
  return hold && state ? { hold, state } : undefined;
}

const verdictOf = (state: TreeState, commandId: string | undefined) => {
  const receiptId = commandId === undefined ? undefined : state.command_receipts.get(commandId);
  return receiptId === undefined ? undefined : state.receipts.get(receiptId)?.body['verdict'];
};

/** The work unit and ordinal a hold's request id names (`{work}:attempt:{n}`), when it is a unit's. */
function attemptOf(requestId: string): { workId: string; ordinal: number } | undefined {
  const match = /^([^:]+):attempt:(\d+)/.exec(requestId);
  return match ? { workId: match[1]!, ordinal: Number(match[2]) } : undefined;
}

/** The causes of the undo steps an Admit or a Settle runs itself, before it releases the lease. */
const UNWIND_CAUSES = [
  'nonce_preflight',
  'pre_dispatch_cleanup',
  'payment_declined',
  'payment_released',
  'not_dispatched',
];

/** Whether the hold was reversed or cancelled for one of `causes`. */
function causeOf(world: World, holdId: string, causes: readonly string[]): boolean {
  const root = world.checker.shadow.holds.get(holdId)?.root_id;
  if (root === undefined) return false;
  return world.budgetStream
    .subjectMessages(world.names.budgetEventSubject(root), 0)
    .some((m) =>
      m.events.some((e) => e.event.payload['hold_id'] === holdId && causes.includes(String(e.event.payload['cause']))),
    );
}

function unitStarted(world: World, workId: string, holdId: string): boolean {
  for (const message of world.workStream.subjectMessages(world.names.workEventSubject(workId), 0))
    for (const { event } of message.events)
      if (event.type === 'AttemptStarted' && event.payload['hold_id'] === holdId) return true;
  return false;
}

const staleReads = (world: World) => world.faults.enabled.has('stale_read');

/** What a load answered by a lagging replica (a direct get on a replicated stream) leads to: `--with stale_read`. */
const STALE_READ_FINDINGS: readonly KnownFinding[] = [
  {
    id: 'stale-read-conflict',
    summary:
      'after a conflict the tree store catches up; a lagging replica shows nothing new, and the store fails the step as a bug ("conflicts without new events")',
    seed: 1,
    steps: 440,
    matches: (violation, world) => staleReads(world) && violation.includes('conflicts without new events'),
  },
  {
    id: 'stale-read-unit-not-found',
    summary:
      'a unit delivered right after its submission is read from a lagging replica as not found, and its message is terminated (dead-lettered): the unit never runs',
    seed: 16,
    steps: 5000,
    matches: (violation, world) => {
      const match = /work unit (\S+) was dead-lettered/.exec(violation);
      return staleReads(world) && match !== null && world.checker.units.has(match[1]!);
    },
  },
  {
    id: 'stale-read-settle-refused',
    summary:
      'a Settle decided on a lagging read finds the hold not yet admitted and records a deny; the worker takes it as settled, and the admitted hold stays captured',
    seed: 14,
    steps: 5000,
    matches: (violation, world) => {
      if (!staleReads(world) || !violation.includes('was left captured (admitted: true)')) return false;
      const found = holdOf(world, holdIn(violation));
      return [...(found?.state.receipts.values() ?? [])].some(
        (r) => r.hold_id === found!.hold.hold_id && String(r.body['reason']).includes('never admitted'),
      );
    },
  },
];

export const KNOWN_FINDINGS: readonly KnownFinding[] = [
  {
    id: 'unwind-lost-with-replica',
    summary:
      'a run that captured a hold and dies before its answer or its unwind commits leaves the hold captured and unadmitted while the command is answered deny by another run: nothing cancels it (B20 never expires a captured hold)',
    seed: 27,
    steps: 2000,
    matches: (violation, world) => {
      if (!violation.includes('was left captured (admitted: false)')) return false;
      const found = holdOf(world, holdIn(violation));
      return found !== undefined && verdictOf(found.state, found.hold.command_id) === 'deny';
    },
  },
  {
    id: 'capture-ambiguity-unresolvable',
    summary:
      'a payment_capture ambiguity is resolved only when the rail shows the capture: one whose capture did not happen, or whose zero-amount release did, stays open for good',
    seed: 2,
    steps: 3000,
    matches: (violation, world) => {
      const match = /ambiguity ambiguity:payment_capture:(.+):\d+ never resolved/.exec(violation);
      const found = holdOf(world, match?.[1]);
      return found !== undefined && world.rail.entries.get(found.hold.request_id)?.state !== 'captured';
    },
  },
  {
    id: 'lease-orphaned-by-crash',
    summary:
      'a replica that dies between undoing a hold (rollback, or cancellation before dispatch) and releasing its lease leaves the lease reserved: nothing releases a lease of a hold that is already closed',
    seed: 27,
    steps: 2000,
    matches: (violation, world) => {
      const match = /lease \S+ of hold (\S+) \((reversed|cancelled)\) was never released/.exec(violation);
      return match !== null && causeOf(world, match[1]!, UNWIND_CAUSES);
    },
  },
  {
    id: 'increase-beyond-authorization',
    summary:
      'an increase raises a paid hold but not its payment authorization; a settlement then captures more than the rail authorized',
    seed: 27,
    steps: 2000,
    matches: (violation, world) => {
      const match = /^rail: (\S+): capture of \d+ above \d+$/.exec(violation.replace(/^step \d+: /, ''));
      if (!match) return false;
      for (const root of world.checker.fold.roots())
        for (const hold of world.checker.fold.latest(root)?.holds.values() ?? [])
          if (hold.request_id === match[1] && (hold.increases ?? 0) > 0) return true;
      return false;
    },
  },
  {
    id: 'admission-orphaned-by-unit',
    summary:
      'an Admit captures a hold, then its worker dies (its outcome unknown, or its allow unrecorded on the unit) and the unit, aborted meanwhile, ends without that attempt: nobody re-sends the command id or settles the hold',
    seed: 40,
    steps: 3000,
    matches: (violation, world) => {
      if (!violation.includes('was left captured (admitted:')) return false;
      const found = holdOf(world, holdIn(violation));
      const attempt = found && attemptOf(found.hold.request_id);
      return (
        attempt !== undefined &&
        world.checker.units.get(attempt.workId)?.ended === true &&
        !unitStarted(world, attempt.workId, found!.hold.hold_id)
      );
    },
  },
  ...STALE_READ_FINDINGS,
];

/** The known finding a violation is, if any. A lease of a hold that is itself a known leak is that leak. */
export function knownFindingOf(violation: string, world: World, all: readonly string[]): KnownFinding | undefined {
  const direct = KNOWN_FINDINGS.find((f) => f.matches(violation, world));
  if (direct) return direct;
  const lease = /lease \S+ of hold (\S+) \(captured\) was never released/.exec(violation);
  if (lease) {
    const leak = all.find((v) => v.includes(`hold ${lease[1]} was left captured`));
    return leak === undefined ? undefined : knownFindingOf(leak, world, []);
  }
  return undefined;
}

/** The quiet tail's summary line is a consequence of the violations it lists, never a finding of its own. */
export const isSummary = (violation: string) => violation.includes('the quiet tail did not settle within its bound');
