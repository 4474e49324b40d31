// `tally completion bash|zsh|fish`: a completion script generated from the command tree
// (cli/completion.ts, ADR 0066).
import { Command } from 'commander';
import { completionScript, SHELLS, type Shell } from '../cli/completion.js';
import { ExitCode, usageError } from '../cli/exit-codes.js';
import { exitWith } from '../cli/program.js';

function rootOf(command: Command): Command {
  let root = command;
  while (root.parent) root = root.parent;
  return root;
}

export function completionCommand(): Command {
  return new Command('completion')
    .description('print a shell completion script: source <(tally completion bash), or save it where the shell looks')
    .argument('<shell>', SHELLS.join(', '))
    .action(
      exitWith((shell: string, _options: unknown, command: Command) => {
        if (!(SHELLS as readonly string[]).includes(shell))
          throw usageError(`<shell> must be one of ${SHELLS.join(', ')}, got ${JSON.stringify(shell)}`);
        process.stdout.write(completionScript(shell as Shell, rootOf(command)));
        return ExitCode.ok;
      }),
    );
}
