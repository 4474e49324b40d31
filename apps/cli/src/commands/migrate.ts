// `tally migrate` (migrate.command.ts).
import { Command } from 'commander';
import { exitWith } from '../cli/program.js';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description("move existing streams to this release's policy, then apply pending projection-schema migrations")
    .action(
      exitWith(async () => {
        const { migrate } = await import('../migrate.command.js');
        return migrate();
      }),
    );
}
