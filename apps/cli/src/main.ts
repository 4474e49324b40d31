// The `tally` command line. Each command is a factory in its own file under commands/
// returning a commander Command, registered with one line below. Definitions stay light:
// an action imports its implementation (`*.command.ts`, or a folder of its own) when it
// runs, so `tally` starts fast whatever the other commands load. Options shared by every
// command (--authority, --orchestrator, --key, --json) and the exit codes are in cli/program.ts.
// Reflect.metadata must exist before the first decorated class is defined; compiled, no loader imports it.
import 'reflect-metadata';
import { runCli, tallyProgram } from './cli/program.js';
import { auditCommand } from './commands/audit.js';
import { backupCommand } from './commands/backup.js';
import { capabilitiesCommand } from './commands/capabilities.js';
import { completionCommand } from './commands/completion.js';
import { keysCommand } from './commands/keys.js';
import { migrateCommand } from './commands/migrate.js';
import { natsConfigCommand } from './commands/nats-config.js';
import { projectionsCommand } from './commands/projections.js';
import { provisionCommand } from './commands/provision.js';
import { receiptsCommand } from './commands/receipts.js';
import { replayCommand } from './commands/replay.js';
import { restoreCommand } from './commands/restore.js';
import { tenantsCommand } from './commands/tenants.js';
import { upCommand } from './commands/up.js';
import { usageCommand } from './commands/usage.js';
import { webhooksCommand } from './commands/webhooks.js';
import { workCommand } from './commands/work.js';

const program = tallyProgram();
program.addCommand(upCommand());
program.addCommand(replayCommand());
program.addCommand(projectionsCommand());
program.addCommand(provisionCommand());
program.addCommand(migrateCommand());
program.addCommand(backupCommand());
program.addCommand(restoreCommand());
program.addCommand(receiptsCommand());
program.addCommand(natsConfigCommand());
program.addCommand(auditCommand());
program.addCommand(keysCommand());
program.addCommand(tenantsCommand());
program.addCommand(capabilitiesCommand());
program.addCommand(workCommand());
program.addCommand(webhooksCommand());
program.addCommand(usageCommand());
program.addCommand(completionCommand());

/** Exits once what was written to stdout and stderr has been flushed (a piped JSONL export is not cut short). */
function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

runCli(program, process.argv.slice(2)).then(exitAfterFlush, (error: unknown) => {
  process.stderr.write(`tally: ${error instanceof Error ? error.message : String(error)}\n`);
  exitAfterFlush(1);
});
