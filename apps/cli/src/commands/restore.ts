// `tally restore --from DIR [--replicas N]` (restore.command.ts).
import { Command } from 'commander';
import { usageError } from '../cli/exit-codes.js';
import { exitWith, globalsOf } from '../cli/program.js';

export function restoreCommand(): Command {
  return new Command('restore')
    .description("put a backup's streams back on a server where they are missing; then run replay for each service")
    .requiredOption('--from <dir>', 'a directory written by tally backup')
    .option('--replicas <n>', "the restored streams' replica count (default: as backed up)")
    .option(
      '--keys <file>',
      "check the manifest's signature against these published keys (GET /v1/keys or the JWKS, saved); " +
        "default: this machine's authority keys",
    )
    .option('--yes', 'delete the empty streams the backup replaces without asking')
    .action(
      exitWith(async (own: { from: string; replicas?: string; keys?: string; yes?: boolean }, command: Command) => {
        const replicas = replicasOf(own.replicas);
        const keys = own.keys === undefined ? {} : { keys: own.keys };
        const { runRestore, loadConfig } = await import('../restore.command.js');
        return runRestore(
          { from: own.from, ...replicas, ...keys, yes: own.yes === true, json: globalsOf(command).json },
          loadConfig(),
        );
      }),
    );
}

function replicasOf(text: string | undefined): { replicas?: number } {
  if (text === undefined) return {};
  const replicas = Number(text);
  if (!(Number.isInteger(replicas) && replicas >= 1 && replicas <= 5))
    throw usageError(`--replicas must be 1..5, got ${text}`);
  return { replicas };
}
