// Runs the spin model checker on a Promela model: generates and compiles the verifier of one
// configuration (a set of -D flags) once, runs it for one property at a time, and reads its
// verdict from the output. The tests that use it fail, never skip, when spin or gcc is missing.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const INSTALL_HINT = 'install it with `apt-get install spin gcc` (Debian/Ubuntu; CI does so in .ci/run)';

export interface SpinLimits {
  /** pan's memory bound (-DMEMLIM): a search that needs more stops, and is reported incomplete. */
  readonly memoryMb: number;
  /** pan's search depth bound (-m). */
  readonly depthMax: number;
  /** Longest a compile or a search may take. */
  readonly stepTimeoutMs: number;
}

export interface Check {
  readonly defines: readonly string[];
  /** The ltl block to check; none: only the model's assertions and end states (-DNOCLAIM). */
  readonly property?: string;
  /** Acceptance cycles under weak fairness (-a -f), for a liveness property. */
  readonly liveness?: boolean;
}

export interface Verdict {
  readonly errors: number;
  /** The property's never claim was violated: a counterexample to its LTL formula. */
  readonly claimViolated: boolean;
  /** The text of an assert of the model that failed, if one did. */
  readonly assertion: string | undefined;
  readonly statesStored: number;
  /** Whether every reachable state was visited (no depth or memory bound was hit). */
  readonly complete: boolean;
  readonly output: string;
}

/** Fails with what to install when spin or the C compiler it needs is not on PATH. */
export function requireTools(): void {
  for (const [tool, flag] of [
    ['spin', '-V'],
    ['gcc', '--version'],
  ] as const) {
    const probe = spawnSync(tool, [flag], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0)
      throw new Error(`${tool} is not installed, and the model checks need it: ${INSTALL_HINT}`);
  }
}

export class SpinRunner {
  private readonly root = mkdtempSync(join(tmpdir(), 'tally-spin-'));
  private readonly built = new Map<string, string>();
  private readonly model: string;

  constructor(
    model: string,
    private readonly limits: SpinLimits,
  ) {
    this.model = resolve(model);
  }

  check(check: Check): Verdict {
    const dir = this.build(check.defines, check.property === undefined);
    const args = [`-m${this.limits.depthMax}`];
    if (check.liveness) args.push('-a', '-f');
    if (check.property !== undefined) args.push('-N', check.property);
    return verdictOf(this.run('./pan', args, dir));
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }

  /** One verifier per configuration: spin writes pan.c into its own directory, gcc compiles it. */
  private build(defines: readonly string[], noClaim: boolean): string {
    const key = [...defines, noClaim ? 'NOCLAIM' : 'CLAIMS'].join(' ');
    const existing = this.built.get(key);
    if (existing) return existing;
    const dir = join(this.root, String(this.built.size));
    mkdirSync(dir);
    this.run('spin', ['-a', ...defines, this.model], dir);
    const flags = ['-O0', `-DMEMLIM=${this.limits.memoryMb}`, '-DNFAIR=4', ...(noClaim ? ['-DNOCLAIM'] : [])];
    this.run('gcc', [...flags, '-o', 'pan', 'pan.c'], dir);
    this.built.set(key, dir);
    return dir;
  }

  private run(command: string, args: readonly string[], cwd: string): string {
    const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: this.limits.stepTimeoutMs });
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
    if (result.error) throw new Error(`${command} ${args.join(' ')} failed: ${result.error.message}\n${output}`);
    // pan exits 0 whether or not it found errors; spin and gcc do not on a bad model.
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}:\n${output}`);
    return output;
  }
}

function verdictOf(output: string): Verdict {
  const errors = /errors: (\d+)/.exec(output);
  if (!errors) throw new Error(`pan printed no verdict:\n${output}`);
  // A never claim of a safety formula fails as an assert of its negation; a liveness one as a cycle.
  const claimViolated = /assertion violated\s+!\( !\(/.test(output) || /acceptance cycle/.test(output);
  const assertion = claimViolated ? undefined : /assertion violated (.*) \(at depth/.exec(output)?.[1];
  const stored = /(\d+) states, stored/.exec(output);
  return {
    errors: Number(errors[1]),
    claimViolated,
    assertion,
    statesStored: stored ? Number(stored[1]) : 0,
    complete: !/max search depth too small|reached -DMEMLIM bound|out of memory/.test(output),
    output,
  };
}
