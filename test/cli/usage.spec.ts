// Proves the command line's frame (issue 12 item 1): every command is registered and listed,
// wrong usage exits 2 naming the problem, help exits 0, and no failure shows a stack trace.
import { describe, expect, it } from '@jest/globals';
import { runTally } from './support/run-cli.js';

describe('tally command line', () => {
  it('item 1: help lists every command with the shared options and the exit codes, and exits 0', async () => {
    const help = await runTally(['--help']);
    expect(help.code).toBe(0);
    for (const command of [
      'up',
      'replay',
      'projections',
      'migrate',
      'backup',
      'restore',
      'receipts',
      'audit',
      'keys',
      'tenants',
    ])
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    for (const option of ['--authority <url>', '--orchestrator <url>', '--key <key>', '--json'])
      expect(help.stdout).toContain(option);
    expect(help.stdout).toContain('Exit codes:');
    const sub = await runTally(['help', 'replay']);
    expect({
      code: sub.code,
      verify: sub.stdout.includes('--verify'),
      global: sub.stdout.includes('--authority'),
    }).toEqual({ code: 0, verify: true, global: true });
  }, 180_000);

  it('Issue 23 item 6: an unknown command lists the commands there are and exits 2', async () => {
    const run = await runTally(['capabilitys']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command 'capabilitys'");
    for (const command of ['up', 'replay', 'receipts', 'audit', 'tenants'])
      expect(run.stderr).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
  }, 60_000);

  it('item 1: an unknown command or option exits 2 with a message and no stack trace', async () => {
    for (const args of [['bogus'], ['replay', '--bogus'], ['replay', '--service', 'nope']]) {
      const run = await runTally(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr.length).toBeGreaterThan(0);
    }
  }, 180_000);
});
