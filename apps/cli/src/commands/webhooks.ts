// `tally webhooks add|list|deliveries TENANT`: a tenant's webhook endpoints on the
// budget-authority (POST/GET /v1/tenants/{id}/webhooks, GET …/webhooks/attempts). The signing
// secret is printed once, when the endpoint is added. There is no resend endpoint yet, so
// there is no `webhooks resend`.
import { Command } from 'commander';
import { ExitCode, usageError } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printFields, printJson, printTable } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';
import { idValue, intValue } from '../cli/values.js';
import { WEBHOOK_EVENT_TYPES } from '@tally/contracts';

type Json = Record<string, unknown>;

/** What an endpoint may subscribe to; the authority refuses any other with 400 naming `events`. */
const WEBHOOK_EVENTS: readonly string[] = WEBHOOK_EVENT_TYPES;

function eventsOf(text: string): string[] {
  const events = text.split(',').map((e) => e.trim());
  const unknown = events.filter((e) => !WEBHOOK_EVENTS.includes(e));
  if (unknown.length > 0 || new Set(events).size !== events.length)
    throw usageError(
      `--events must be distinct names from ${WEBHOOK_EVENTS.join(', ')}${unknown.length ? `; not ${unknown.join(', ')}` : ''}`,
    );
  return events;
}

function urlOf(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usageError(`--url ${JSON.stringify(text)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw usageError('--url must be an https URL');
  if (text.length > 2_048) throw usageError('--url must be at most 2048 characters');
  return text;
}

const webhooksPath = (tenant: string) => `/v1/tenants/${encodeURIComponent(idValue('tenant', tenant))}/webhooks`;

export function webhooksCommand(): Command {
  const webhooks = new Command('webhooks').description("a tenant's webhook endpoints: add, list, deliveries");
  webhooks
    .command('add')
    .description('register an endpoint; its signing secret is printed once and never again (issuer)')
    .argument('<tenant>', 'the tenant id')
    .requiredOption('--url <url>', 'where deliveries are POSTed (https)')
    .option('--events <list>', 'comma-separated event types', WEBHOOK_EVENTS.join(','))
    .action(
      exitWith(async (tenant: string, options: { url: string; events: string }, command: Command) => {
        const globals = globalsOf(command);
        const body = { url: urlOf(options.url), events: eventsOf(options.events) };
        const hook = await new TallyHttp(globals).post<Json>('authority', webhooksPath(tenant), body);
        if (globals.json) printJson(hook);
        else {
          printFields([
            ['id', hook['id'] as string],
            ['url', hook['url'] as string],
            ['events', (hook['events'] as string[]).join(', ')],
            ['secret', hook['secret'] as string],
          ]);
          process.stderr.write('Store the secret now: it verifies the deliveries and is not shown again.\n');
        }
        return ExitCode.ok;
      }),
    );
  webhooks
    .command('list')
    .description("the tenant's endpoints, without their secrets")
    .argument('<tenant>', 'the tenant id')
    .action(
      exitWith(async (tenant: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const body = await new TallyHttp(globals).get<{ webhooks: Json[] }>('authority', webhooksPath(tenant));
        if (globals.json) printJson(body);
        else
          printTable(
            ['id', 'url', 'events', 'created_at'],
            body.webhooks.map((w) => [
              w['id'] as string,
              w['url'] as string,
              (w['events'] as string[]).join(','),
              w['created_at'] as string,
            ]),
          );
        return ExitCode.ok;
      }),
    );
  webhooks
    .command('deliveries')
    .description('each delivery attempt, newest last: its message, endpoint, outcome and status')
    .argument('<tenant>', 'the tenant id')
    .option('--message <webhook_id>', 'only the attempts of this message')
    .option('--limit <n>', 'at most this many, the newest (1 to 1000)', '100')
    .action(
      exitWith(async (tenant: string, options: { message?: string; limit: string }, command: Command) => {
        const globals = globalsOf(command);
        const query = new URLSearchParams({ limit: String(intValue('--limit', options.limit, 1, 1_000)) });
        if (options.message !== undefined) query.set('webhook_id', idValue('message', options.message));
        const body = await new TallyHttp(globals).get<{ attempts: Json[] }>(
          'authority',
          `${webhooksPath(tenant)}/attempts?${query}`,
        );
        if (globals.json) printJson(body);
        else
          printTable(
            attemptColumns(body.attempts),
            body.attempts.map((a) => attemptColumns(body.attempts).map((c) => cell(a[c]))),
          );
        return ExitCode.ok;
      }),
    );
  return webhooks;
}

/** The attempt records' scalar fields, in the order the first one has them. */
function attemptColumns(attempts: readonly Json[]): string[] {
  const first = attempts[0] ?? {};
  return Object.keys(first).filter((k) => first[k] === null || typeof first[k] !== 'object');
}

function cell(v: unknown): string | number | boolean | null {
  return v === null || typeof v === 'number' || typeof v === 'boolean' ? v : v === undefined ? null : String(v);
}
