// One run of the simulation for one seed: build the world, issue its trees with no fault
// striking, run `steps` scheduler steps with faults, then a quiet tail with none until
// everything settles (or its bound runs out), checking the invariants after every step and
// the final ones at the end. The first violation stops the run.
import { finalChecks, openSummary, settled } from '../check/final-checks.js';
import { isSummary, knownFindingOf } from '../check/known-findings.js';
import { Clients } from '../world/clients.js';
import { FaultInjector } from '../world/fault-injector.js';
import { DEFAULT_FAULT_RATES, DEFAULT_FAULTS, type FaultKind, type FaultRates } from '../world/faults.js';
import { issueTrees } from '../world/setup.js';
import type { WorldShape } from '../world/shape.js';
import type { SimWiring } from '../world/wiring.js';
import { World } from '../world/world.js';

export interface SimOptions {
  readonly seed: number;
  /** Scheduler steps of the fault phase. */
  readonly steps: number;
  /** The fault kinds that may strike (default: all). */
  readonly faults?: ReadonlySet<FaultKind>;
  readonly rates?: Partial<FaultRates>;
  /** Keep every trace line (to print a reproduction), not only the last ones. */
  readonly keepTrace?: boolean;
  /** Bounds of the quiet tail: virtual time and steps. */
  readonly quietMsMax?: number;
  readonly quietStepsMax?: number;
}

export interface SimStats {
  readonly faultSteps: number;
  readonly quietSteps: number;
  readonly virtualMs: number;
  readonly budgetCommits: number;
  readonly receipts: number;
  readonly holds: number;
  readonly unitsSubmitted: number;
  readonly unitsEnded: number;
  readonly directCalls: number;
  readonly providerCalls: number;
  readonly overruns: number;
  readonly railReferences: number;
  readonly exemptHolds: number;
}

export interface SimResult {
  readonly seed: number;
  readonly steps: number;
  readonly faults: readonly FaultKind[];
  /** Every violation found, in order. */
  readonly violations: readonly string[];
  /** The violations that are none of the known findings: a run passes when there are none. */
  readonly unexplained: readonly string[];
  /** The known findings the run reproduced, by id (check/known-findings.ts). */
  readonly known: readonly string[];
  readonly traceHash: string;
  readonly trace: readonly string[];
  readonly stats: SimStats;
  readonly shape: WorldShape;
  readonly elapsedMs: number;
  /** CPU time of the run (user + system): what the steps cost, whatever else the machine is doing. */
  readonly cpuMs: number;
}

/** The quiet tail's default bound: past the longest hold TTL, many sweeps and reconciler runs, and every retry. */
const QUIET_MS_MAX = 4 * 60_000;
const QUIET_STEPS_MAX = 400_000;
/** How often the quiet tail asks whether everything has settled (the question walks every hold). */
const SETTLED_EVERY_STEPS = 64;
/** With no caller and no unit left, how long without a commit ends the tail (added to the hold TTL). */
const STILL_MS = 45_000;

export async function simulate(options: SimOptions, wiring: SimWiring): Promise<SimResult> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const faults = options.faults ?? new Set(DEFAULT_FAULTS);
  const world = new World({
    seed: options.seed,
    faults,
    rates: { ...DEFAULT_FAULT_RATES, ...options.rates },
    keepTrace: options.keepTrace ?? false,
    wiring,
  });
  const failures = world.checker.violations;
  const unhandled = (reason: unknown) =>
    world.checker.fail(`unhandled rejection: ${String((reason as Error)?.stack ?? reason)}`);
  process.on('unhandledRejection', unhandled);
  // Faults make the code under test create errors by the thousand (conflicts, lost acknowledgements);
  // capturing a stack for each costs more than the rest of their handling. Traces keep a reproduction.
  const stackTraceLimit = Error.stackTraceLimit;
  if (!options.keepTrace) Error.stackTraceLimit = 0;
  let clients: Clients | undefined;
  let faultSteps = 0;
  let quietSteps = 0;
  try {
    world.faults.quiet = true;
    for (const replica of [...world.authorities, ...world.orchestrators]) replica.start();
    const trees = await drive(world, issueTrees(world));
    world.faults.quiet = false;
    clients = new Clients(world, trees);
    clients.start();
    const injector = new FaultInjector(world, clients);
    injector.start();
    const startSteps = world.scheduler.steps;
    while (world.scheduler.steps - startSteps < options.steps && failures.length === 0) {
      if (!(await world.scheduler.step())) break;
      world.checker.compareReplicas(world.authorities);
    }
    faultSteps = world.scheduler.steps - startSteps;
    clients.stopped = true;
    world.faults.quiet = true;
    injector.heal();
    world.note('quiet tail');
    const converged = await quietTail(world, clients, options);
    quietSteps = world.scheduler.steps - startSteps - faultSteps;
    if (failures.length === 0) finalChecks(world, clients, converged);
  } catch (error) {
    world.checker.fail(`the simulation itself failed: ${(error as Error).stack ?? String(error)}`);
  } finally {
    process.off('unhandledRejection', unhandled);
    Error.stackTraceLimit = stackTraceLimit;
  }
  const { unexplained, known } = classify(world, failures);
  return {
    seed: options.seed,
    steps: options.steps,
    faults: [...faults],
    violations: [...failures],
    unexplained,
    known,
    traceHash: world.trace.digest(),
    trace: world.trace.text(),
    stats: statsOf(world, clients, faultSteps, quietSteps),
    shape: world.shape,
    elapsedMs: performance.now() - started,
    cpuMs: cpuMsSince(cpu),
  };
}

/** Splits the violations into known findings and the rest; the quiet tail's summary counts as what it sums up. */
function classify(world: World, violations: readonly string[]): { unexplained: string[]; known: string[] } {
  const known = new Set<string>();
  const unexplained: string[] = [];
  for (const violation of violations) {
    if (isSummary(violation)) continue;
    const finding = knownFindingOf(violation, world, violations);
    if (finding) known.add(finding.id);
    else unexplained.push(violation);
  }
  if (unexplained.length > 0) unexplained.push(...violations.filter(isSummary));
  return { unexplained, known: [...known] };
}

async function quietTail(world: World, clients: Clients, options: SimOptions): Promise<boolean> {
  const deadline = world.scheduler.nowMs + (options.quietMsMax ?? QUIET_MS_MAX);
  const stepsMax = options.quietStepsMax ?? QUIET_STEPS_MAX;
  // Longer than any wait that ends in a commit: an uncaptured hold's TTL, a pending release, two reconciler runs.
  const stillMs = world.shape.holdTtlMs + STILL_MS;
  for (let step = 0; step < stepsMax && world.checker.violations.length === 0; step++) {
    if (step % SETTLED_EVERY_STEPS === 0) {
      if (settled(world, clients)) return true;
      // Nothing left that could move: what is still open stays open, and the liveness checks say so.
      if (idle(world, clients) && world.scheduler.nowMs - world.checker.lastCommitMs > stillMs) break;
    }
    if (world.scheduler.nowMs > deadline || !(await world.scheduler.step())) break;
    world.checker.compareReplicas(world.authorities);
  }
  const done = settled(world, clients);
  if (!done) world.note(`quiet tail ended unsettled: ${openSummary(world, clients)}`);
  return done;
}

const idle = (world: World, clients: Clients) => clients.busy === 0 && world.queue.open() === 0;

/** Runs steps until `work` settles: the set-up before the faults start. */
async function drive<T>(world: World, work: Promise<T>): Promise<T> {
  let done = false;
  const settledWork = work.finally(() => (done = true));
  settledWork.catch(() => undefined);
  while (!done) if (!(await world.scheduler.step())) throw new Error('the set-up stalled: nothing left to run');
  return settledWork;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function statsOf(world: World, clients: Clients | undefined, faultSteps: number, quietSteps: number): SimStats {
  const holds = world.checker.shadow.holds;
  return {
    faultSteps,
    quietSteps,
    virtualMs: world.scheduler.nowMs - world.startMs,
    budgetCommits: world.checker.budgetCommits,
    receipts: world.checker.chains.receipts,
    holds: holds.size,
    unitsSubmitted: world.checker.units.size,
    unitsEnded: [...world.checker.units.values()].filter((u) => u.ended).length,
    directCalls: clients?.directCalls ?? 0,
    providerCalls: world.provider.calls,
    overruns: world.provider.overruns,
    railReferences: world.rail.entries.size,
    exemptHolds: clients?.exempt.size ?? 0,
  };
}
