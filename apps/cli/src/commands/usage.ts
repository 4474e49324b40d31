// `tally usage`: realized spend per minute, hour or day and currency, oldest first
// (GET /v1/spend), over every capability the key may read; `tally capabilities usage ID`
// gives one capability's figures per grant.
import { Command, Option } from 'commander';
import { ExitCode, usageError } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printJson, printTable } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';

interface Spend {
  bucket: string;
  since: string;
  series: { start: string; currency: string; realized_units: number | string; entries: number }[];
  truncated: boolean;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export function usageCommand(): Command {
  return new Command('usage')
    .description('realized spend per minute, hour or day and currency, across the capabilities the key may read')
    .addOption(new Option('--bucket <size>', 'the size of a bucket').choices(['minute', 'hour', 'day']).default('hour'))
    .option('--since <time>', 'from this RFC 3339 time (default: the last 60 buckets)')
    .action(
      exitWith(async (options: { bucket: string; since?: string }, command: Command) => {
        if (options.since !== undefined && (!RFC3339.test(options.since) || Number.isNaN(Date.parse(options.since))))
          throw usageError(
            `--since ${options.since} is not an RFC 3339 time`,
            'For example --since 2026-03-01T00:00:00Z.',
          );
        const globals = globalsOf(command);
        const query = new URLSearchParams({
          bucket: options.bucket,
          ...(options.since ? { since: options.since } : {}),
        });
        const spend = await new TallyHttp(globals).get<Spend>('authority', `/v1/spend?${query}`);
        if (globals.json) printJson(spend);
        else {
          printTable(
            ['start', 'currency', 'realized', 'entries'],
            spend.series.map((b) => [b.start, b.currency, String(b.realized_units), b.entries]),
            `(no spend since ${spend.since})`,
          );
          if (spend.truncated) process.stderr.write('The series was cut at its bound; pass a later --since.\n');
        }
        return ExitCode.ok;
      }),
    );
}
