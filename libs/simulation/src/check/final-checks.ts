// The checks at the end of a run, once the quiet tail has let everything settle: a replay
// from scratch equals the incremental one and every replica's memory; the rail holds exactly
// the money the ledger says it holds; and everything that was open has closed (every
// ambiguity resolved, every uncaptured hold expired, every hold settled or given back, every
// unit ended, every lease of a hold that was not dispatched released or at least tried).
import type { Hold } from '@tally/budget-domain';
import type { SimRail } from '../ports/sim-rail.js';
import type { Clients } from '../world/clients.js';
import type { World } from '../world/world.js';
import { canonical, ReferenceFold } from './reference-fold.js';

export function finalChecks(world: World, clients: Clients, converged: boolean): void {
  const fail = (detail: string) => world.checker.fail(detail);
  world.checker.fold.assertAll();
  replayFromScratch(world, fail);
  world.checker.compareReplicasFully(world.authorities);
  railMatchesLedger(world, fail);
  liveness(world, clients, converged, fail);
}

function replayFromScratch(world: World, fail: (detail: string) => void): void {
  const fresh = new ReferenceFold(fail);
  for (const message of world.budgetStream.all()) fresh.apply(message.events[0]!.event.aggregateId, message);
  for (const root of world.checker.fold.roots())
    if (canonical(fresh.latest(root)) !== canonical(world.checker.fold.latest(root)))
      fail(`a replay of ${root} from scratch differs from the replay kept commit by commit`);
}

const HOLDS_NO_MONEY = new Set(['declined', 'released', 'refunded']);

/** One authorize, at most one capture, release or refund per hold, and the rail holds what the ledger says. */
function railMatchesLedger(world: World, fail: (detail: string) => void): void {
  const rail = world.rail;
  for (const violation of rail.violations) fail(`rail: ${violation.reference}: ${violation.detail}`);
  const requests = new Set<string>();
  for (const root of world.checker.fold.roots())
    for (const hold of world.checker.fold.latest(root)?.holds.values() ?? []) {
      // A preflight hold shares its request id with the hold that follows it, and never touches the rail.
      if (hold.preflight) continue;
      requests.add(hold.request_id);
      const problem = railProblem(rail, hold);
      if (problem) fail(`hold ${hold.hold_id} is ${hold.status} (payment ${hold.payment.status}) but ${problem}`);
    }
  for (const [reference, entry] of rail.entries) {
    if (entry.captures + entry.releases + entry.refunds > 1)
      fail(`rail moved money for ${reference} ${entry.captures + entry.releases + entry.refunds} times`);
    if (!requests.has(reference) && entry.state !== 'declined')
      fail(`rail ${entry.state} ${reference}, a request the ledger has no hold for`);
  }
}

function railProblem(rail: SimRail, hold: Hold): string | undefined {
  const entry = rail.entries.get(hold.request_id);
  const state = entry?.state ?? 'none';
  const released =
    state === 'none' || HOLDS_NO_MONEY.has(state) || (state === 'pending' && entry!.releases + entry!.refunds > 0);
  switch (hold.status) {
    case 'reversed':
    case 'cancelled':
    case 'released':
      return released ? undefined : `the rail still holds its money (${state})`;
    case 'settled': {
      if (rail.mode === 'prepaid_final' || hold.payment.status === 'none') return undefined;
      const expected = hold.realized_units! < hold.exposure_units ? hold.realized_units! : hold.exposure_units;
      if (hold.payment.status === 'released')
        return state === 'released' ? undefined : `the rail shows ${state}, not released`;
      if (hold.payment.status !== 'captured') return undefined;
      if (state !== 'captured') return `the rail shows ${state}, not captured`;
      return entry!.captured_units === expected
        ? undefined
        : `the rail captured ${entry!.captured_units}, not ${expected}`;
    }
    case 'retained':
      return hold.payment.status === 'authorized' && released ? `the rail gave the money back (${state})` : undefined;
    default:
      return undefined;
  }
}

function liveness(world: World, clients: Clients, converged: boolean, fail: (detail: string) => void): void {
  const checker = world.checker;
  if (!converged) fail(`the quiet tail did not settle within its bound: ${openSummary(world, clients)}`);
  for (const root of checker.fold.roots())
    for (const ambiguity of checker.fold.latest(root)?.ambiguities.values() ?? [])
      if (ambiguity.resolution === undefined) fail(`ambiguity ${ambiguity.ambiguity_id} never resolved`);
  for (const hold of checker.shadow.holds.values()) {
    if (hold.status === 'authorized') fail(`uncaptured hold ${hold.hold_id} never expired (B20)`);
    if (hold.status === 'captured' && !clients.exempt.has(hold.hold_id))
      fail(
        `hold ${hold.hold_id} was left captured (admitted: ${hold.admitted}) and nothing will ever settle or release it`,
      );
  }
  for (const workId of world.queue.deadLettered) fail(`work unit ${workId} was dead-lettered`);
  const dead = new Set(world.queue.deadLettered);
  for (const [workId, unit] of checker.units)
    if (!unit.ended && !dead.has(workId)) fail(`work unit ${workId} never ended`);
  for (const lease of unreleasedLeases(world, clients))
    fail(
      `lease ${lease.lease_id} of hold ${lease.hold_id} (${checker.shadow.holds.get(lease.hold_id)?.status}) was never released`,
    );
}

/** Leases the ledger records for a hold that no release was ever tried for. */
function unreleasedLeases(world: World, clients: Clients) {
  return [...(world.leases?.leases.values() ?? [])].filter(
    (lease) =>
      lease.releaseAttempts === 0 &&
      !clients.exempt.has(lease.hold_id) &&
      world.checker.shadow.holds.has(lease.hold_id) &&
      leaseRecorded(world, lease.hold_id, lease.lease_id),
  );
}

function leaseRecorded(world: World, holdId: string, leaseId: string): boolean {
  const hold = world.checker.fold.latest(world.checker.shadow.holds.get(holdId)!.root_id)?.holds.get(holdId);
  return hold?.lease_id === leaseId;
}

export function openSummary(world: World, clients: Clients): string {
  const holds = [...world.checker.shadow.holds.values()];
  return [
    `${clients.busy} callers busy`,
    `${world.queue.open()} units queued`,
    `${world.checker.ambiguitiesOpen()} ambiguities open`,
    `${holds.filter((h) => h.status === 'authorized').length} holds uncaptured`,
    `${holds.filter((h) => h.status === 'captured' && !clients.exempt.has(h.hold_id)).length} holds captured`,
  ].join(', ');
}

/** Whether the quiet tail has nothing left to settle. */
export function settled(world: World, clients: Clients): boolean {
  if (clients.busy > 0 || world.queue.open() > 0 || world.checker.ambiguitiesOpen() > 0) return false;
  if (world.checker.shadow.authorized.size > 0) return false;
  for (const hold of world.checker.shadow.holds.values())
    if (hold.status === 'captured' && !clients.exempt.has(hold.hold_id)) return false;
  // A sweep releases a lease only after its undo committed (ADR 0059): the tail waits for that too.
  return unreleasedLeases(world, clients).length === 0;
}
