// `npm run sim -- --seed N --steps K`: runs the simulation of the budget path for one seed
// (or `--seeds A..B`, or `--random C` fresh seeds), prints each run's trace hash and figures,
// and for a failure its violations and the shortest trace the shrinker finds.
import { FAULT_KINDS, simulate, type FaultKind } from '@tally/simulation';
import { appWiring } from './wiring.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const [from, to] = flag('seeds', flag('seed', '1')).split('..').map(Number) as [number, number | undefined];
const steps = Number(flag('steps', '5000'));
const without = new Set(flag('without', '').split(',').filter(Boolean));
const faults = new Set(FAULT_KINDS.filter((k) => !without.has(k))) as Set<FaultKind>;
for (let seed = from; seed <= (to ?? from); seed++) {
  const grep = flag('grep', '');
  const result = await simulate({ seed, steps, faults, keepTrace: grep !== '' }, appWiring);
  if (grep !== '')
    for (const line of result.trace) if (grep.split('|').some((g) => line.includes(g))) console.log(line.slice(0, 400));
  const total = result.stats.faultSteps + result.stats.quietSteps;
  const rate = Math.round((total / result.elapsedMs) * 1000);
  const cpuRate = Math.round((total / result.cpuMs) * 1000);
  console.log(
    JSON.stringify({
      seed,
      hash: result.traceHash.slice(0, 16),
      ok: result.violations.length === 0,
      rate,
      cpuRate,
      stats: result.stats,
    }),
  );
  for (const v of result.violations.slice(0, 5)) console.log('VIOLATION', v.slice(0, 1500));
  if (result.violations.length > 0 && args.includes('--trace')) console.log(result.trace.slice(-80).join('\n'));
}
