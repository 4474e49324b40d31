// `tally capabilities issue|delegate|show|usage|revoke`: the budget-authority's capabilities
// (POST /v1/capabilities, with parent_id for a delegation, GET /v1/capabilities/{id} and
// /usage, POST /v1/capabilities/{id}/revoke). A grant is one `--grant` flag:
// SERVER/TOOL followed by its limits as key=value pairs with the wire's names.
import { Command, Option } from 'commander';
import { ExitCode, usageError } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printFields, printHeading, printJson, printTable } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';
import { collect, idValue, intValue, moneyValue } from '../cli/values.js';

type Json = Record<string, unknown>;

/** The authority's bound on a capability's lifetime (365 days); not imported, so `tally` starts without the contracts. */
const TTL_MAX_SECONDS = 31_536_000;
const GRANTS_MAX = 64;
const MONEY_KEYS = ['max_cost_per_invocation', 'max_total_cost_units', 'hold_cap_units'] as const;
const GRANT_KEYS = ['max_invocations', 'currency', ...MONEY_KEYS] as const;
const SUBJECT_KEY = /^[A-Za-z0-9_-]{43}$/;

/** One `--grant scripted/model,max_total_cost_units=1000,currency=USD` as the wire's grant object. */
export function grantOf(spec: string): Json {
  const [target = '', ...pairs] = spec.split(',');
  const slash = target.indexOf('/');
  const server = target.slice(0, slash);
  const tool = target.slice(slash + 1);
  if (slash < 1 || tool === '' || server.length > 128 || tool.length > 128)
    throw usageError(
      `--grant ${JSON.stringify(spec)} must start with SERVER/TOOL`,
      'For example --grant openai/gpt-4o,max_total_cost_units=5000,currency=USD.',
    );
  const grant: Json = { server_id: server, tool_name: tool };
  for (const pair of pairs) {
    const [key = '', value = ''] = pair.split('=', 2);
    const flag = `--grant ${key}`;
    if (!(GRANT_KEYS as readonly string[]).includes(key))
      throw usageError(`${flag} is not a grant limit`, `Use ${GRANT_KEYS.join(', ')}.`);
    if (key === 'currency') {
      if (!/^[A-Z]{3}$/.test(value))
        throw usageError(`${flag} must be an ISO 4217 code such as USD, got ${JSON.stringify(value)}`);
      grant[key] = value;
    } else if (key === 'max_invocations') grant[key] = intValue(flag, value, 0, 1_000_000_000);
    else grant[key] = moneyValue(flag, value);
  }
  return grant;
}

interface IssueOptions {
  subjectKey: string;
  ttl: string;
  grant?: string[];
  tenant?: string;
  bind?: boolean;
}

interface DelegateOptions extends Omit<IssueOptions, 'tenant'> {
  budgetShare?: string;
  parentToken?: string;
}

function issueBody(options: IssueOptions): Json {
  if (!SUBJECT_KEY.test(options.subjectKey))
    throw usageError('--subject-key must be an Ed25519 public key, 43 characters of base64url (the JWK x)');
  const grants = (options.grant ?? []).map(grantOf);
  if (grants.length === 0 || grants.length > GRANTS_MAX)
    throw usageError(
      `--grant must be given 1 to ${GRANTS_MAX} times`,
      'For example --grant openai/gpt-4o,max_total_cost_units=5000.',
    );
  return {
    subject_public_key: options.subjectKey,
    ttl_seconds: intValue('--ttl', options.ttl, 1, TTL_MAX_SECONDS),
    grants,
    ...(options.bind ? { bind: 'subject_key' } : {}),
    ...(options.tenant === undefined ? {} : { tenant_id: options.tenant }),
  };
}

/** The options issue and delegate share. */
function withIssueOptions(command: Command): Command {
  return command
    .requiredOption('--subject-key <x>', "the agent's Ed25519 public key (base64url, the JWK x)")
    .option('--ttl <seconds>', 'lifetime in seconds', '3600')
    .option(
      '--grant <spec>',
      'SERVER/TOOL[,max_invocations=N][,max_cost_per_invocation=N][,max_total_cost_units=N][,currency=USD][,hold_cap_units=N]; repeat for more',
      collect,
    )
    .option('--bind', 'bind the token to the subject key: each spend must be signed with it (ADR 0011)');
}

const capabilityPath = (id: string) => `/v1/capabilities/${encodeURIComponent(idValue('capability', id))}`;

export function capabilitiesCommand(): Command {
  const capabilities = new Command('capabilities').description('capabilities: issue, delegate, show, usage, revoke');
  withIssueOptions(
    capabilities.command('issue').description('issue a root capability; prints its id and token (issuer)'),
  )
    .option('--tenant <id>', "the owning tenant (admin only; default: the key's tenant)")
    .action(
      exitWith(async (options: IssueOptions, command: Command) => {
        const globals = globalsOf(command);
        const issued = await new TallyHttp(globals).post<Json>('authority', '/v1/capabilities', issueBody(options));
        printIssued(issued, globals.json);
        return ExitCode.ok;
      }),
    );
  withIssueOptions(
    capabilities
      .command('delegate')
      .description("delegate from a capability: the child only narrows its parent's grants and budget")
      .argument('<parent_id>', 'the capability to delegate from'),
  )
    .option('--budget-share <units>', "minor units of the parent's budget the child may spend")
    .option('--parent-token <token>', "the parent's token, when the --key is not an issuer of its tenant")
    .action(
      exitWith(async (parent: string, options: DelegateOptions, command: Command) => {
        const globals = globalsOf(command);
        const body = {
          ...issueBody(options),
          parent_id: idValue('capability', parent),
          ...(options.budgetShare === undefined
            ? {}
            : { budget_share_units: moneyValue('--budget-share', options.budgetShare) }),
          ...(options.parentToken === undefined ? {} : { parent_token: options.parentToken }),
        };
        const issued = await new TallyHttp(globals).post<Json>('authority', '/v1/capabilities', body);
        printIssued(issued, globals.json);
        return ExitCode.ok;
      }),
    );
  capabilities
    .command('show')
    .description('a capability: its tree, grants, expiry and whether it is revoked')
    .argument('<id>', 'the capability id')
    .action(
      exitWith(async (id: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const c = await new TallyHttp(globals).get<Json>('authority', capabilityPath(id));
        if (globals.json) printJson(c);
        else printCapability(c);
        return ExitCode.ok;
      }),
    );
  capabilities
    .command('usage')
    .description("a capability's usage per grant: invocations, exposed, realized and committed cost")
    .argument('<id>', 'the capability id')
    .option('--period <when>', 'current, previous, or an RFC 3339 time: the period that contains it', 'current')
    .action(
      exitWith(async (id: string, options: { period: string }, command: Command) => {
        const globals = globalsOf(command);
        const period = encodeURIComponent(options.period);
        const usage = await new TallyHttp(globals).get<{ grants: Json[] }>(
          'authority',
          `${capabilityPath(id)}/usage?period=${period}`,
        );
        if (globals.json) printJson(usage);
        else printUsage(usage.grants);
        return ExitCode.ok;
      }),
    );
  capabilities
    .command('revoke')
    .description('revoke a capability and everything delegated from it, on every replica at once')
    .argument('<id>', 'the capability id')
    .addOption(
      new Option('--token <token>', 'the token of the capability or an ancestor, when the --key is not an issuer'),
    )
    .action(
      exitWith(async (id: string, options: { token?: string }, command: Command) => {
        const globals = globalsOf(command);
        const body = options.token === undefined ? {} : { token: options.token };
        const out = await new TallyHttp(globals).post<Json>('authority', `${capabilityPath(id)}/revoke`, body);
        if (globals.json) printJson(out);
        else process.stdout.write(`revoked ${id}\n`);
        return ExitCode.ok;
      }),
    );
  return capabilities;
}

function printIssued(issued: Json, json: boolean): void {
  if (json) return printJson(issued);
  printFields([
    ['id', issued['id'] as string],
    ['expires_at', issued['expires_at'] as string],
    ['token', issued['token'] as string],
  ]);
  printGrants((issued['grants'] ?? []) as Json[]);
}

function printCapability(c: Json): void {
  printFields([
    ['id', c['id'] as string],
    ['tree', c['root_id'] as string],
    ['parent', c['parent_id'] as string | null],
    ['tenant', c['tenant_id'] as string | null],
    ['issued_at', c['issued_at'] as string],
    ['expires_at', c['expires_at'] as string],
    ['revoked', (c['revoked_at'] as string | null) ?? 'no'],
    ['children', ((c['children'] ?? []) as string[]).join(', ') || null],
  ]);
  printGrants((c['grants'] ?? []) as Json[]);
}

function printGrants(grants: readonly Json[]): void {
  printHeading('Grants');
  printTable(
    ['grant', 'server/tool', 'max_invocations', 'max_cost', 'max_total', 'currency'],
    grants.map((g, i) => [
      i,
      `${String(g['server_id'])}/${String(g['tool_name'])}`,
      g['max_invocations'] as number | undefined,
      g['max_cost_per_invocation'] === undefined ? null : String(g['max_cost_per_invocation']),
      g['max_total_cost_units'] === undefined ? null : String(g['max_total_cost_units']),
      g['currency'] as string | undefined,
    ]),
  );
}

function printUsage(grants: readonly Json[]): void {
  printTable(
    ['grant', 'invocations', 'exposed', 'realized', 'committed', 'currency', 'period'],
    grants.map((g) => [
      g['grant_index'] as number,
      g['invocation_count'] as number,
      String(g['exposed_cost_units']),
      String(g['realized_cost_units']),
      String(g['committed_cost_units']),
      g['currency'] as string | null,
      g['period_start'] ? `${String(g['period_start'])} – ${String(g['period_end'])}` : null,
    ]),
  );
}
