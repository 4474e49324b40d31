// `npm run sim -- --seed N --steps K`: the deterministic simulation of the budget path (ADR
// 0057). Runs one seed (`--seed`), a range (`--seeds A..B`) or fresh random seeds (`--random
// C`), K scheduler steps of faults each, and prints one line per seed: its trace hash, its
// figures and the known findings it reproduced. A run with an unexplained violation is
// shrunk (fewer steps, fewer kinds of fault) and printed with its seed, the command that
// replays it and its trace; the exit code is then 1. `--with stale_read` adds lagging
// replicas, `--without kind,…` drops faults, `--trace` prints a passing run's trace too,
// `--grep a|b` prints the trace lines that contain a or b.
import { randomInt } from 'node:crypto';
import { DEFAULT_FAULTS, FAULT_KINDS, reproduction, shrink, simulate, type FaultKind } from '@tally/simulation';
import { appWiring } from './wiring.js';

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const list = (name: string) => new Set(flag(name, '').split(',').filter(Boolean));

function seedsOf(): number[] {
  if (args.includes('--random')) return Array.from({ length: Number(flag('random', '10')) }, () => randomInt(2 ** 31));
  const [from, to] = flag('seeds', flag('seed', '1')).split('..').map(Number) as [number, number | undefined];
  return Array.from({ length: (to ?? from) - from + 1 }, (_, i) => from + i);
}

const steps = Number(flag('steps', '5000'));
const [withs, without] = [list('with'), list('without')];
const faults = new Set(FAULT_KINDS.filter((k) => (DEFAULT_FAULTS.includes(k) || withs.has(k)) && !without.has(k)));
const grep = flag('grep', '');
let failed = 0;
for (const seed of seedsOf()) {
  const result = await simulate(
    { seed, steps, faults: faults as Set<FaultKind>, keepTrace: grep !== '' || args.includes('--trace') },
    appWiring,
  );
  const total = result.stats.faultSteps + result.stats.quietSteps;
  const line = {
    seed,
    ok: result.unexplained.length === 0,
    hash: result.traceHash,
    steps: total,
    stepsPerCpuSecond: Math.round((total / result.cpuMs) * 1000),
    stepsPerSecond: Math.round((total / result.elapsedMs) * 1000),
    known: result.known,
    stats: result.stats,
  };
  console.log(JSON.stringify(line));
  if (grep !== '')
    for (const l of result.trace)
      if (grep.split('|').some((g) => l.includes(g))) console.log(l);
      else if (args.includes('--trace')) console.log(result.trace.join('\n'));
  if (result.unexplained.length === 0) continue;
  failed++;
  console.log(
    args.includes('--no-shrink') ? result.unexplained.join('\n') : reproduction(await shrink(result, appWiring)),
  );
}
process.exit(failed > 0 ? 1 : 0);
