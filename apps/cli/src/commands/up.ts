// `tally up`: the local stack (up.command.ts).
import { Command } from 'commander';
import { exitWith } from '../cli/program.js';

export function upCommand(): Command {
  return new Command('up').description('run the local stack: NATS (started if needed) and both services').action(
    exitWith(async () => {
      const { up } = await import('../up.command.js');
      return up({ root: process.cwd(), env: process.env, readyTimeoutMs: 60_000 });
    }),
  );
}
