// Proves the budget path keeps its invariants under seeded faults, in the deterministic
// simulation of both services (ADR 0057): 200 fixed seeds and a time-boxed batch of random
// ones (their seeds printed), every invariant checked after every step, and the same seed
// replaying byte for byte. Known findings are counted apart; anything else fails with its
// seed and its shortest reproduction. This comes in addition to the real-NATS suites.
import { describe, expect, it } from '@jest/globals';
import { randomInt } from 'node:crypto';
import { DEFAULT_FAULTS, reproduction, shrink, signatureOf, simulate, type SimResult } from '@tally/simulation';
import { appWiring } from './wiring.js';

const FIXED_SEEDS = 200;
/** Fault-phase steps per fixed seed; the quiet tail adds what it needs to settle. */
const FIXED_STEPS = 300;
const RANDOM_BATCH_MS = 15_000;
const RANDOM_STEPS = 1_000;
/** What a failure may spend shrinking before it is reported. */
const SHRINK_BUDGET_MS = 20_000;

interface Tally {
  runs: number;
  steps: number;
  cpuMs: number;
  readonly known: Map<string, number[]>;
}

async function run(seed: number, steps: number, tally: Tally): Promise<SimResult> {
  const result = await simulate({ seed, steps }, appWiring);
  tally.runs++;
  tally.steps += result.stats.faultSteps + result.stats.quietSteps;
  tally.cpuMs += result.cpuMs;
  for (const id of result.known) tally.known.set(id, [...(tally.known.get(id) ?? []), seed]);
  if (result.unexplained.length > 0) throw new Error(reproduction(await shrink(result, appWiring, SHRINK_BUDGET_MS)));
  return result;
}

function report(what: string, tally: Tally): void {
  const known = [...tally.known].map(([id, seeds]) => `${id} ×${seeds.length} (seeds ${seeds.slice(0, 5).join(', ')})`);
  console.log(
    `${what}: ${tally.runs} runs, ${tally.steps} steps, ${Math.round((tally.steps / tally.cpuMs) * 1000)} steps per CPU second; known findings: ${known.join('; ') || 'none'}`,
  );
}

const fresh = (): Tally => ({ runs: 0, steps: 0, cpuMs: 0, known: new Map() });

describe('simulation of the budget path', () => {
  it('B1-B21 O1-O8 200 fixed seeds: limits, holds, receipts, rail and paid calls hold after every step, and the quiet tail settles', async () => {
    const tally = fresh();
    for (let seed = 1; seed <= FIXED_SEEDS; seed++) await run(seed, FIXED_STEPS, tally);
    report('fixed seeds', tally);
    expect(tally.runs).toBe(FIXED_SEEDS);
  }, 600_000);

  it('B1-B21 O1-O8 a time-boxed batch of random seeds (printed) keeps the same invariants', async () => {
    const tally = fresh();
    const seeds: number[] = [];
    const until = performance.now() + RANDOM_BATCH_MS;
    while (performance.now() < until) {
      const seed = randomInt(2 ** 31);
      seeds.push(seed);
      console.log(`random seed ${seed}: npm run sim -- --seed ${seed} --steps ${RANDOM_STEPS}`);
      await run(seed, RANDOM_STEPS, tally);
    }
    report(`random seeds ${seeds.join(', ')}`, tally);
    expect(tally.runs).toBeGreaterThan(0);
  }, 300_000);

  it('the same seed gives the same trace, byte for byte, whether or not its lines are kept; another seed another', async () => {
    const [first, again, kept, other] = [
      await simulate({ seed: 7, steps: 800 }, appWiring),
      await simulate({ seed: 7, steps: 800 }, appWiring),
      await simulate({ seed: 7, steps: 800, keepTrace: true }, appWiring),
      await simulate({ seed: 8, steps: 800 }, appWiring),
    ];
    expect(again.traceHash).toBe(first.traceHash);
    expect(kept.traceHash).toBe(first.traceHash);
    expect(kept.trace.length).toBeGreaterThan(first.stats.faultSteps);
    expect(other.traceHash).not.toBe(first.traceHash);
    expect(again.stats).toEqual(first.stats);
  }, 120_000);

  it('a failure is shrunk to fewer steps and faults on the same seed, and printed with its seed, its replay command and its trace', async () => {
    // Lagging replicas make the tree store fail a step (ADR 0057, stale-read-conflict): a failure to shrink.
    const failing = await simulate(
      { seed: 1, steps: 2_000, faults: new Set([...DEFAULT_FAULTS, 'stale_read']) },
      appWiring,
    );
    expect(failing.violations.length).toBeGreaterThan(0);
    const shrunk = await shrink(failing, appWiring, 60_000);
    expect(shrunk.steps).toBeLessThan(failing.steps);
    expect(shrunk.faults.length).toBeLessThan(failing.faults.length);
    expect(shrunk.result.violations.map(signatureOf)).toContain(signatureOf(failing.violations[0]!));
    const printed = reproduction(shrunk);
    expect(printed).toContain(`seed 1 fails`);
    expect(printed).toContain(`npm run sim -- --seed 1 --steps ${shrunk.steps}`);
    expect(printed).toContain('--with stale_read');
    expect(printed).toContain(shrunk.result.trace.at(-1)!);
  }, 180_000);
});
