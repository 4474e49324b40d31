// Issue 23 item 6: `tally completion bash|zsh|fish` prints a script generated from the command
// tree that the shell parses (`bash -n`, and `zsh -n` / `fish -n` where installed) and that
// names every top-level command; bash's completes a subcommand and its options.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { runTally } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'tally-completion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const COMMANDS = ['capabilities', 'work', 'webhooks', 'usage', 'completion', 'tenants', 'keys', 'audit', 'receipts'];
const installed = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;

async function script(shell: string): Promise<string> {
  const run = await runTally(['completion', shell]);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  const file = join(dir, `tally.${shell}`);
  writeFileSync(file, run.stdout);
  return file;
}

describe('Issue 23 item 6: tally completion', () => {
  it.each(['bash', 'zsh', 'fish'])(
    'Issue 23: the %s script names every command and parses (`-n`, where the shell is installed)',
    async (shell) => {
      const file = await script(shell);
      const text = spawnSync('cat', [file], { encoding: 'utf8' }).stdout;
      for (const name of COMMANDS) expect(text).toContain(name);
      if (installed(shell))
        expect(spawnSync(shell, ['-n', file], { encoding: 'utf8' })).toMatchObject({ status: 0, stderr: '' });
    },
    120_000,
  );

  it('Issue 23: bash completes a subcommand under capabilities and the options of capabilities issue', async () => {
    const file = await script('bash');
    const complete = (words: string) =>
      spawnSync(
        'bash',
        [
          '-c',
          `source ${file}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _tally; echo "\${COMPREPLY[*]}"`,
        ],
        {
          encoding: 'utf8',
        },
      ).stdout.trim();
    expect(complete('tally capabilities de')).toBe('delegate');
    expect(complete('tally --json capabilities issue --')).toContain('--subject-key');
    expect(complete('tally --json capabilities issue --')).toContain('--authority');
    expect(complete('tally wor')).toBe('work');
  }, 120_000);

  it('Issue 23: an unknown shell is wrong usage (exit 2)', async () => {
    const run = await runTally(['completion', 'ksh']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('bash, zsh, fish');
  }, 120_000);
});
