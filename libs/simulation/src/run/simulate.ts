// One run of the simulation for one seed: build the world, issue its trees with no fault
// striking, run `steps` scheduler steps with faults, then a quiet tail with none until
// everything settles (or its bound runs out), checking the invariants after every step and
// the final ones at the end. The first violation stops the run.
import { finalChecks, openSummary, settled } from '../check/final-checks.js';
import { Clients } from '../world/clients.js';
import { FaultInjector } from '../world/fault-injector.js';
import { DEFAULT_FAULT_RATES, FAULT_KINDS, type FaultKind, type FaultRates } from '../world/faults.js';
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
  readonly violations: readonly string[];
  readonly traceHash: string;
  readonly trace: readonly string[];
  readonly stats: SimStats;
  readonly shape: WorldShape;
  readonly elapsedMs: number;
  /** CPU time of the run (user + system): what the steps cost, whatever else the machine is doing. */
  readonly cpuMs: number;
}

/** The quiet tail's default bound: past the longest hold TTL, many sweeps and reconciler runs, and every retry. */
const QUIET_MS_MAX = 15 * 60_000;
const QUIET_STEPS_MAX = 400_000;
/** How often the quiet tail asks whether everything has settled (the question walks every hold). */
const SETTLED_EVERY_STEPS = 256;

export async function simulate(options: SimOptions, wiring: SimWiring): Promise<SimResult> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const faults = options.faults ?? new Set(FAULT_KINDS);
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
  return {
    seed: options.seed,
    steps: options.steps,
    faults: [...faults],
    violations: [...failures],
    traceHash: world.trace.digest(),
    trace: world.trace.text(),
    stats: statsOf(world, clients, faultSteps, quietSteps),
    shape: world.shape,
    elapsedMs: performance.now() - started,
    cpuMs: cpuMsSince(cpu),
  };
}

async function quietTail(world: World, clients: Clients, options: SimOptions): Promise<boolean> {
  const deadline = world.scheduler.nowMs + (options.quietMsMax ?? QUIET_MS_MAX);
  const stepsMax = options.quietStepsMax ?? QUIET_STEPS_MAX;
  for (let step = 0; step < stepsMax && world.checker.violations.length === 0; step++) {
    if (step % SETTLED_EVERY_STEPS === 0 && settled(world, clients)) return true;
    if (world.scheduler.nowMs > deadline || !(await world.scheduler.step())) break;
    world.checker.compareReplicas(world.authorities);
  }
  const done = settled(world, clients);
  if (!done) world.note(`quiet tail ended unsettled: ${openSummary(world, clients)}`);
  return done;
}

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
