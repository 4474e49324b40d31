// `tally projections status` and `tally projections retry` (projections.command.ts, ADR 0045).
import { Command } from 'commander';
import { exitWith, globalsOf } from '../cli/program.js';

interface ProjectionsOptions {
  readonly service?: string;
}

export function projectionsCommand(): Command {
  const projections = new Command('projections').description(
    'the read models: checkpoints, lag and quarantined aggregates (ADR 0045)',
  );
  projections
    .command('status')
    .description(
      "each projection's checkpoint, its stream's last sequence (lag), every quarantined aggregate and why; exit 1 if any",
    )
    .option('--service <name>', 'only this service (budget-authority or agent-orchestrator)')
    .action(
      exitWith(async (own: ProjectionsOptions, command: Command) => {
        const { projectionsStatus } = await import('../projections.command.js');
        return projectionsStatus({ ...own, json: globalsOf(command).json });
      }),
    );
  projections
    .command('retry')
    .description(
      'apply the events each quarantined aggregate holds back with this release (the service stopped); exit 1 if any still fail',
    )
    .option('--service <name>', 'only this service (budget-authority or agent-orchestrator)')
    .action(
      exitWith(async (own: ProjectionsOptions, command: Command) => {
        const { projectionsRetry } = await import('../projections.command.js');
        return projectionsRetry({ ...own, json: globalsOf(command).json });
      }),
    );
  return projections;
}
