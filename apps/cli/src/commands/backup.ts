// `tally backup --out DIR [--streams …]` (backup.command.ts).
import { Command } from 'commander';
import { BACKUP_STREAM_KINDS, LEDGER_STREAM_KINDS, streamKinds } from '../backup-manifest.js';
import { exitWith, globalsOf } from '../cli/program.js';

export function backupCommand(): Command {
  return new Command('backup')
    .description('JetStream snapshot of the ledger streams into a new directory, manifest signed (docs/operations.md)')
    .requiredOption('--out <dir>', 'a new or empty directory')
    .option(
      '--streams <list>',
      `comma-separated: ${Object.keys(BACKUP_STREAM_KINDS).join(', ')}`,
      LEDGER_STREAM_KINDS.join(','),
    )
    .option('--key-id <id>', "the authority's keyring key that signs the manifest (default: its configured key)")
    .action(
      exitWith(async (own: { out: string; streams: string; keyId?: string }, command: Command) => {
        const { runBackup, loadConfig } = await import('../backup.command.js');
        const keyId = own.keyId === undefined ? {} : { keyId: own.keyId };
        return runBackup(
          { out: own.out, streams: streamKinds(own.streams), ...keyId, json: globalsOf(command).json },
          loadConfig(),
        );
      }),
    );
}
