// Findings of the simulator that are reported and not fixed yet (ADR 0057). A violation is
// put down to one only when the ledger shows that finding's mechanism, not merely its
// symptom: a hold left captured whose unit ended without its attempt is admission-orphaned-by-unit,
// a hold left captured for other reasons is a new failure. Runs count
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

/** The work unit and ordinal a hold's request id names (`{work}:attempt:{n}`), when it is a unit's. */
function attemptOf(requestId: string): { workId: string; ordinal: number } | undefined {
  const match = /^([^:]+):attempt:(\d+)/.exec(requestId);
  return match ? { workId: match[1]!, ordinal: Number(match[2]) } : undefined;
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
    seed: 6,
    steps: 5000,
    matches: (violation, world) => {
      if (!staleReads(world)) return false;
      const match = /work unit (\S+) was dead-lettered/.exec(violation);
      if (match !== null) return world.checker.units.has(match[1]!);
      // The hold of an attempt whose unit was dead-lettered so: nobody settles it.
      const found = violation.includes('was left captured') ? holdOf(world, holdIn(violation)) : undefined;
      const attempt = found && attemptOf(found.hold.request_id);
      return attempt !== undefined && world.queue.deadLettered.includes(attempt.workId);
    },
  },
  {
    id: 'stale-read-settle-refused',
    summary:
      'a Settle decided on a lagging read finds the hold not yet admitted and records a deny; the worker takes it as settled, and the admitted hold stays captured',
    seed: 46,
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
