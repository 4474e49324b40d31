// `tally replay [--service NAME] [--verify]` (replay.command.ts).
import { Command } from 'commander';
import { exitWith } from '../cli/program.js';
import type { ReplayOptions } from '../replay.command.js';

export function replayCommand(): Command {
  return new Command('replay')
    .description('rebuild projections from the streams, with a progress bar')
    .option('--service <name>', 'only this service (budget-authority or agent-orchestrator)')
    .option('--verify', 'rebuild into a scratch database and compare digests with the live tables', false)
    .action(
      exitWith(async (options: ReplayOptions) => {
        const { replay } = await import('../replay.command.js');
        return replay(options);
      }),
    );
}
