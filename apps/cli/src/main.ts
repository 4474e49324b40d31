// The `tally` command line. Each command lives in its own `*.command.ts` file as a factory
// returning a commander Command; adding one is one line below. Options shared by every
// command (--authority, --orchestrator, --key, --json) and the exit codes are in cli/program.ts.
import { runCli, tallyProgram } from './cli/program.js';
import { backupCommand } from './backup.command.js';
import { migrateCommand } from './migrate.command.js';
import { replayCommand } from './replay.command.js';
import { restoreCommand } from './restore.command.js';
import { upCommand } from './up.command.js';

const program = tallyProgram();
program.addCommand(upCommand());
program.addCommand(replayCommand());
program.addCommand(migrateCommand());
program.addCommand(backupCommand());
program.addCommand(restoreCommand());

/** Exits once what was written to stdout and stderr has been flushed (a piped JSONL export is not cut short). */
function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

runCli(program, process.argv.slice(2)).then(exitAfterFlush, (error: unknown) => {
  process.stderr.write(`tally: ${error instanceof Error ? error.message : String(error)}\n`);
  exitAfterFlush(1);
});
