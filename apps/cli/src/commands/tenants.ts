// `tally tenants list|create` and `tally tenants keys list|create|delete`: tenants and their
// operator keys (http-api.md, Credentials), for an admin. A new key is printed once: Tally
// keeps only its hash.
import { Command, InvalidArgumentError, Option } from 'commander';
import { ExitCode } from '../cli/exit-codes.js';
import { TallyHttp } from '../cli/http.js';
import { printFields, printJson, printTable } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';

interface Tenant {
  id: string;
  display_name: string;
  created_at: string | null;
}

interface OperatorKey {
  key_id: string;
  role: string;
  tenant_id: string;
  created_at?: string;
  expires_at?: string;
  deleted_at?: string;
  key?: string;
}

const ROLES = ['admin', 'issuer', 'reader'];
const TTL_MAX_SECONDS = 10 * 366 * 86_400;

function ttlSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 60 || n > TTL_MAX_SECONDS)
    throw new InvalidArgumentError(`must be a whole number of seconds from 60 to ${TTL_MAX_SECONDS}`);
  return n;
}

const tenantPath = (id: string) => `/v1/tenants/${encodeURIComponent(id)}`;

export function tenantsCommand(): Command {
  const tenants = new Command('tenants').description('tenants and their operator keys (admin)');
  tenants
    .command('list')
    .description('every tenant')
    .action(
      exitWith(async (_options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const body = await new TallyHttp(globals).get<{ tenants: Tenant[] }>('authority', '/v1/tenants');
        if (globals.json) printJson(body);
        else
          printTable(
            ['id', 'display_name', 'created_at'],
            body.tenants.map((t) => [t.id, t.display_name, t.created_at]),
          );
        return ExitCode.ok;
      }),
    );
  tenants
    .command('create')
    .description('create a tenant')
    .argument('<id>', '1 to 63 of a-z, 0-9, _ and -')
    .option('--display-name <name>', 'a name for people')
    .action(
      exitWith(async (id: string, options: { displayName?: string }, command: Command) => {
        const globals = globalsOf(command);
        const tenant = await new TallyHttp(globals).post<Tenant>('authority', '/v1/tenants', {
          id,
          ...(options.displayName === undefined ? {} : { display_name: options.displayName }),
        });
        if (globals.json) printJson(tenant);
        else
          printFields([
            ['id', tenant.id],
            ['display_name', tenant.display_name],
            ['created_at', tenant.created_at],
          ]);
        return ExitCode.ok;
      }),
    );
  tenants.addCommand(operatorKeysCommand());
  return tenants;
}

function operatorKeysCommand(): Command {
  const keys = new Command('keys').description("a tenant's operator keys: list, create, delete");
  keys
    .command('list')
    .description("the tenant's keys, without secrets")
    .argument('<tenant>', 'the tenant id')
    .action(
      exitWith(async (tenant: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const body = await new TallyHttp(globals).get<{ keys: OperatorKey[] }>(
          'authority',
          `${tenantPath(tenant)}/keys`,
        );
        if (globals.json) printJson(body);
        else
          printTable(
            ['key_id', 'role', 'created_at', 'expires_at', 'deleted_at'],
            body.keys.map((k) => [k.key_id, k.role, k.created_at, k.expires_at, k.deleted_at]),
          );
        return ExitCode.ok;
      }),
    );
  keys
    .command('create')
    .description('create an operator key; it is printed once and never again')
    .argument('<tenant>', 'the tenant id')
    .addOption(new Option('--role <role>', "the key's role").choices(ROLES).makeOptionMandatory())
    .option('--ttl <seconds>', 'expire the key after this many seconds', ttlSeconds)
    .action(
      exitWith(async (tenant: string, options: { role: string; ttl?: number }, command: Command) => {
        const globals = globalsOf(command);
        const key = await new TallyHttp(globals).post<OperatorKey>('authority', `${tenantPath(tenant)}/keys`, {
          role: options.role,
          ...(options.ttl === undefined ? {} : { ttl_seconds: options.ttl }),
        });
        if (globals.json) printJson(key);
        else {
          printFields([
            ['key_id', key.key_id],
            ['tenant_id', key.tenant_id],
            ['role', key.role],
            ['expires_at', key.expires_at],
            ['key', key.key],
          ]);
          process.stderr.write('Store the key now: Tally keeps only its hash and cannot show it again.\n');
        }
        return ExitCode.ok;
      }),
    );
  keys
    .command('delete')
    .description('delete an operator key; it is refused from then on, on every replica')
    .argument('<tenant>', 'the tenant id')
    .argument('<key_id>', 'the key id')
    .action(
      exitWith(async (tenant: string, keyId: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        await new TallyHttp(globals).delete('authority', `${tenantPath(tenant)}/keys/${encodeURIComponent(keyId)}`);
        if (globals.json) printJson({ deleted: keyId, tenant_id: tenant });
        else process.stdout.write(`deleted key ${keyId} of tenant ${tenant}\n`);
        return ExitCode.ok;
      }),
    );
  return keys;
}
