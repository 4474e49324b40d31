// Shrinking a failure: the same seed is run again with fewer steps and fewer kinds of fault,
// keeping each cut that still fails the same way, within a time budget; the last failing run
// is repeated with its full trace kept, which is what a failure prints.
import { DEFAULT_FAULTS, type FaultKind } from '../world/faults.js';
import type { SimWiring } from '../world/wiring.js';
import { simulate, type SimOptions, type SimResult } from './simulate.js';

export interface Shrunk {
  readonly seed: number;
  readonly steps: number;
  readonly faults: readonly FaultKind[];
  /** The shrunk run, with every trace line kept. */
  readonly result: SimResult;
  readonly runs: number;
}

/** What a failure is, with its ids and figures taken out: the shrinker keeps a cut only if this stays. */
export function signatureOf(violation: string): string {
  return violation
    .replace(/^step \d+: /, '')
    .replace(/cap_[0-9a-f]+(--[0-9a-f]+)?/g, 'CAP')
    .replace(/\b[a-z]+\d+(\.\d+)?\b/g, 'ID')
    .replace(/\d+/g, '#')
    .slice(0, 120);
}

export async function shrink(failing: SimResult, wiring: SimWiring, budgetMs = 60_000): Promise<Shrunk> {
  const target = signatureOf(failing.unexplained[0] ?? failing.violations[0] ?? '');
  const deadline = performance.now() + budgetMs;
  let runs = 0;
  let best = { steps: failing.steps, faults: [...failing.faults] as FaultKind[] };
  const fails = async (options: SimOptions) => {
    runs++;
    const result = await simulate(options, wiring);
    return result.violations.some((v) => signatureOf(v) === target);
  };
  // Fewer steps: halve while it still fails, then close in on the boundary.
  let low = 0;
  while (best.steps > 1 && performance.now() < deadline) {
    const steps = Math.floor((low + best.steps) / 2);
    if (steps <= low) break;
    if (await fails({ seed: failing.seed, steps, faults: new Set(best.faults) })) best = { ...best, steps };
    else low = steps;
  }
  // Fewer faults: drop each kind that the failure does not need.
  for (const kind of [...best.faults]) {
    if (performance.now() > deadline) break;
    const faults = best.faults.filter((k) => k !== kind);
    if (await fails({ seed: failing.seed, steps: best.steps, faults: new Set(faults) })) best = { ...best, faults };
  }
  const result = await simulate(
    { seed: failing.seed, steps: best.steps, faults: new Set(best.faults), keepTrace: true },
    wiring,
  );
  return { seed: failing.seed, steps: best.steps, faults: best.faults, result, runs: runs + 1 };
}

/** How a failure is printed: its seed, the command that replays it, its violations and its trace. */
export function reproduction(shrunk: Shrunk, traceLinesMax = 400): string {
  const { result } = shrunk;
  const lines = result.trace;
  const without = DEFAULT_FAULTS.filter((k) => !shrunk.faults.includes(k));
  const added = shrunk.faults.filter((k) => !DEFAULT_FAULTS.includes(k));
  const command = [
    `npm run sim -- --seed ${shrunk.seed} --steps ${shrunk.steps}`,
    ...(without.length > 0 ? [`--without ${without.join(',')}`] : []),
    ...(added.length > 0 ? [`--with ${added.join(',')}`] : []),
  ].join(' ');
  return [
    `seed ${shrunk.seed} fails; shortest reproduction found in ${shrunk.runs} runs: ${command}`,
    ...result.violations.slice(0, 10).map((v) => `  violation: ${v}`),
    `trace (${lines.length} lines${lines.length > traceLinesMax ? `, the last ${traceLinesMax}` : ''}), hash ${result.traceHash}:`,
    ...lines.slice(-traceLinesMax),
  ].join('\n');
}
