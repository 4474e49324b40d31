// `tally provision` (provision.command.ts).
import { Command } from 'commander';
import { exitWith } from '../cli/program.js';

export function provisionCommand(): Command {
  return new Command('provision')
    .description(
      'create or update the streams, durable consumers and KV buckets this configuration needs (the migrations Job runs it)',
    )
    .action(
      exitWith(async () => {
        const { provision } = await import('../provision.command.js');
        return provision();
      }),
    );
}
