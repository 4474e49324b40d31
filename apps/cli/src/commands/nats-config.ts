// `tally nats-config` (nats-config.command.ts).
import { Command } from 'commander';
import { exitWith } from '../cli/program.js';

export function natsConfigCommand(): Command {
  return new Command('nats-config')
    .description(
      'write the generated NATS server config and users (deploy/nats, deploy/kustomize/base/nats-config.yaml) under a directory',
    )
    .option('--out <dir>', 'the repository or install directory that holds deploy/', '.')
    .action(
      exitWith(async (options: { out: string }) => {
        const { writeNatsConfig } = await import('../nats-config.command.js');
        return writeNatsConfig(options.out);
      }),
    );
}
