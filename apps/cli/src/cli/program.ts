// The `tally` program on commander: the options every command takes, the exit codes, and
// one place that turns a failure into a message that says what to do (never a stack trace).
// A command is a factory in its own `*.command.ts` file returning a commander Command, and
// main.ts registers it with one line.
import { Command, CommanderError, Option } from 'commander';
import { CliError, ExitCode } from './exit-codes.js';

export const DEFAULT_AUTHORITY_URL = 'http://127.0.0.1:7401';
export const DEFAULT_ORCHESTRATOR_URL = 'http://127.0.0.1:7402';

/** The command being run, for the prefix of its error messages (`tally receipts verify: …`). */
let running = 'tally';

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** What every command may read from the options shared by all of them. */
export interface GlobalOptions {
  readonly authority: string;
  readonly orchestrator: string;
  readonly key?: string;
  readonly json: boolean;
}

export function tallyProgram(): Command {
  const program = new Command('tally')
    .description('Tally: the budget authority and agent orchestrator from the command line')
    .addOption(
      new Option('--authority <url>', 'budget-authority base URL')
        .env('TALLY_AUTHORITY_URL')
        .default(DEFAULT_AUTHORITY_URL),
    )
    .addOption(
      new Option('--orchestrator <url>', 'agent-orchestrator base URL')
        .env('TALLY_ORCHESTRATOR_URL')
        .default(DEFAULT_ORCHESTRATOR_URL),
    )
    .addOption(new Option('--key <key>', 'operator key or capability token (sent as a bearer)').env('TALLY_KEY'))
    .addOption(new Option('--json', 'print JSON instead of text for people').default(false))
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showHelpAfterError('(tally help <command> shows its options)')
    .exitOverride();
  program.addHelpText('after', EXIT_CODES_HELP);
  program.hook('preAction', (_program, action) => {
    running = commandPath(action);
  });
  return program;
}

const EXIT_CODES_HELP = `
Exit codes:
  0  done (for a check: everything checked out)
  1  the work failed, or a check found a problem
  2  wrong usage (unknown command, bad option or argument)
  3  a service could not be reached or answered unexpectedly
  4  the credential was missing or refused (HTTP 401/403)
  5  not found (HTTP 404)`;

/** The shared options as a command's action sees them (its own options are separate). */
export function globalsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/**
 * An action that ends the command with an exit code. Commander ignores what actions return,
 * so the code is kept on process.exitCode and `runCli` exits with it.
 */
export function exitWith<A extends unknown[]>(
  run: (...args: A) => Promise<number> | number,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    process.exitCode = await run(...args);
  };
}

/** Parses and runs; resolves to the process's exit code. */
export async function runCli(program: Command, argv: readonly string[]): Promise<number> {
  inheritSettings(program);
  if (argv.length === 0) {
    program.outputHelp();
    return ExitCode.ok;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError && error.code === 'commander.unknownCommand') printCommands(program);
    return reportFailure(error);
  }
}

/** After "unknown command", the commands there are: a typo is fixed without a second call for help. */
function printCommands(program: Command): void {
  const width = Math.max(...program.commands.map((c) => c.name().length));
  const lines = program.commands.map((c) => `  ${c.name().padEnd(width)}  ${c.summary() || c.description()}`);
  process.stderr.write(`\nCommands:\n${lines.join('\n')}\n`);
}

/** Commands built on their own (addCommand) get the program's help, error and exit settings, all the way down. */
function inheritSettings(parent: Command): void {
  for (const child of parent.commands) {
    child.copyInheritedSettings(parent);
    inheritSettings(child);
  }
}

function reportFailure(error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander already printed its message (or the help); only the code is ours.
    if (
      error.code === 'commander.helpDisplayed' ||
      error.code === 'commander.version' ||
      error.code === 'commander.help'
    )
      return ExitCode.ok;
    return ExitCode.usage;
  }
  const where = running;
  if (error instanceof CliError) {
    process.stderr.write(`${where}: ${error.message}\n${error.hint ? `  ${error.hint}\n` : ''}`);
    return error.exitCode;
  }
  // Anything else is unexpected: its message, and how to get more, but no stack trace.
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${where}: ${message}\n  This is unexpected; run again with TALLY_DEBUG=1 for details.\n`);
  if (process.env['TALLY_DEBUG'] === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  return ExitCode.failed;
}
