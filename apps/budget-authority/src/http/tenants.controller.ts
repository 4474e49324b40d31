// Tenants and their operator keys (http-api.md, Credentials). Only an admin creates
// tenants and keys and deletes keys; a key is shown once, in the answer that creates it.
// Reads of a tenant are for its own keys' holders; another tenant is a 404. A read sees what
// was written through any replica (ADR 0048): one that finds nothing, and every listing of
// keys, first lets this replica's view catch up with the tenant's subject.
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Res } from '@nestjs/common';
import type { DirectoryCommands, DirectoryView } from '@tally/directory-service';
import type { OperatorKeyRecord, Rejection, TenantState } from '@tally/directory-domain';
import { Access, actsIn, Caller, type Principal } from '@tally/platform-auth';
import { ProblemException } from '@tally/platform-app';
import { IsIn, IsInt, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { staleHeader, type HeaderSink } from './http-support.js';

export const DIRECTORY_COMMANDS = Symbol('DIRECTORY_COMMANDS');
export const DIRECTORY_VIEW = Symbol('DIRECTORY_VIEW');

const TEN_YEARS_S = 10 * 366 * 86_400;

export class CreateTenantDto {
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, {
    message: 'id must be 1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit',
  })
  id!: string;
  @IsOptional() @IsString() @Length(1, 256) display_name?: string;
}

export class CreateKeyDto {
  @IsIn(['admin', 'issuer', 'reader']) role!: 'admin' | 'issuer' | 'reader';
  // A second is enough: short-lived keys for a job, and a test can watch one expire.
  @IsOptional() @IsInt() @Min(1) @Max(TEN_YEARS_S) ttl_seconds?: number;
}

const STATUS: Record<Rejection['code'], number> = {
  tenant_exists: 409,
  tenant_unknown: 404,
  tenant_invalid: 400,
  key_unknown: 404,
  keys_full: 409,
  signing_key_unknown: 404,
  signing_key_conflict: 409,
  signing_key_retired: 409,
  signing_key_active: 409,
};

function refusedBy(rejection: Rejection): ProblemException {
  return new ProblemException(STATUS[rejection.code], rejection.code, rejection.message);
}

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

function tenantToWire(t: TenantState) {
  return { id: t.tenant_id, display_name: t.display_name ?? t.tenant_id, created_at: iso(t.created_at_ms) ?? null };
}

function keyToWire(k: OperatorKeyRecord) {
  return {
    key_id: k.key_id,
    role: k.role,
    tenant_id: k.tenant_id,
    created_at: iso(k.created_at_ms),
    ...(k.expires_at_ms === undefined ? {} : { expires_at: iso(k.expires_at_ms) }),
    ...(k.deleted_at_ms === undefined ? {} : { deleted_at: iso(k.deleted_at_ms) }),
  };
}

/**
 * The tenant as this replica's view has it; on a miss, once the view has caught up with the
 * tenant's subject, so a tenant created through another replica is found (ADR 0048). When the
 * view could not catch up in time the answer says it may be behind.
 */
export async function tenantAsWritten(
  view: DirectoryView,
  tenantId: string,
  res: HeaderSink,
): Promise<TenantState | undefined> {
  const known = view.tenant(tenantId);
  if (known) return known;
  staleHeader(res, await view.awaitTenant(tenantId));
  return view.tenant(tenantId);
}

@Controller('v1/tenants')
export class TenantsController {
  constructor(
    @Inject(DIRECTORY_COMMANDS) private readonly commands: DirectoryCommands,
    @Inject(DIRECTORY_VIEW) private readonly view: DirectoryView,
  ) {}

  @Post()
  @HttpCode(201)
  @Access('admin')
  async create(@Body() body: CreateTenantDto) {
    const out = await this.commands.createTenant(body.id, body.display_name);
    if (!out.ok) throw refusedBy(out.rejection);
    return tenantToWire(out.value);
  }

  /** Additive: every tenant. */
  @Get()
  @Access('admin')
  async list(@Res({ passthrough: true }) res: HeaderSink) {
    staleHeader(res, await this.view.awaitCurrent());
    return { tenants: this.view.tenants().map(tenantToWire) };
  }

  /** Additive: one tenant, for its own keys or an admin. */
  @Get(':id')
  @Access('reader')
  async read(@Param('id') id: string, @Caller() caller: Principal, @Res({ passthrough: true }) res: HeaderSink) {
    const tenant = actsIn(caller, 'reader', id) ? await tenantAsWritten(this.view, id, res) : undefined;
    if (!tenant) throw new ProblemException(404, 'not_found', `tenant ${id} is unknown`);
    return tenantToWire(tenant);
  }

  @Post(':id/keys')
  @HttpCode(201)
  @Access('admin')
  async createKey(@Param('id') id: string, @Body() body: CreateKeyDto) {
    const out = await this.commands.createKey(id, body.role, body.ttl_seconds);
    if (!out.ok) throw refusedBy(out.rejection);
    const { expires_at_ms, ...key } = out.value;
    return { ...key, ...(expires_at_ms === undefined ? {} : { expires_at: iso(expires_at_ms) }) };
  }

  /** Additive: the tenant's keys, without secrets or hashes; a key just created through any replica is listed. */
  @Get(':id/keys')
  @Access('admin')
  async keys(@Param('id') id: string, @Res({ passthrough: true }) res: HeaderSink) {
    staleHeader(res, await this.view.awaitTenant(id));
    const tenant = this.view.tenant(id);
    if (!tenant) throw new ProblemException(404, 'not_found', `tenant ${id} is unknown`);
    return { keys: [...tenant.keys.values()].map(keyToWire) };
  }

  @Delete(':id/keys/:keyId')
  @HttpCode(204)
  @Access('admin')
  async deleteKey(@Param('id') id: string, @Param('keyId') keyId: string): Promise<void> {
    const out = await this.commands.deleteKey(id, keyId);
    if (!out.ok) throw refusedBy(out.rejection);
  }
}
