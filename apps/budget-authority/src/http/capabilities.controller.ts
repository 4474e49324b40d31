// POST /v1/capabilities (issue or delegate), revoke, and the projection-backed reads of a
// capability: usage per grant and its mutation events newest first (B18). Each read of a
// tree the projection has quarantined answers 503 instead of stale rows (ADR 0045).
import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { moneyToWire, IssueCapabilityDto, RevokeCapabilityDto } from '@tally/contracts';
import { Access, Caller, type Principal, type SignedRequest } from '@tally/platform-auth';
import { rootOfCapability } from '@tally/budget-application';
import {
  ambiguityToWire,
  BudgetQueries,
  EVERY_TENANT,
  holdToWire,
  type BudgetScope,
  type CapabilityView,
} from '@tally/budget-projections';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { AUTHORITY_PORT, type AuthorityPort } from '../authority.port.js';
import { toIssueCommand, wireJson } from '../command-mapping.js';
import { RevocationNotices } from '../runtime/revocation-notices.js';
import { budgetScopeOf, CapabilityAccess } from './capability-access.js';
import { Freshness } from './freshness.js';
import { Idempotency } from './idempotency.js';
import { notFound, refused, staleHeader, type HeaderSink } from './http-support.js';

export const EVENTS_LIMIT_MAX = 1_000;
const EVENTS_LIMIT_DEFAULT = 100;

export class EventsQueryDto {
  @IsOptional() @Type(() => Number) @IsInt() @Min(0) @Max(1_000) grant_index?: number;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(EVENTS_LIMIT_MAX) limit?: number;
}

export class UsageQueryDto {
  /** `current` (default), `previous`, or an RFC 3339 time: the period that contains it. */
  @IsOptional()
  @Matches(/^(current|previous|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))$/, {
    message: 'period must be current, previous or an RFC 3339 time',
  })
  period?: string;
}

export class HoldsQueryDto {
  @IsOptional()
  @IsIn(['authorized', 'captured', 'admitted', 'reversed', 'cancelled', 'released', 'settled', 'retained'])
  status?: string;
}

@Controller('v1/capabilities')
export class CapabilitiesController {
  constructor(
    @Inject(AUTHORITY_PORT) private readonly authority: AuthorityPort,
    @Inject(BudgetQueries) private readonly queries: BudgetQueries,
    @Inject(Freshness) private readonly freshness: Freshness,
    @Inject(CapabilityAccess) private readonly access: CapabilityAccess,
    @Inject(Idempotency) private readonly idempotency: Idempotency,
    @Inject(RevocationNotices) private readonly revocations: RevocationNotices,
  ) {}

  @Post()
  @HttpCode(201)
  @Access('issuer', 'possession')
  async issue(
    @Body() body: IssueCapabilityDto,
    @Headers('idempotency-key') key: string | undefined,
    @Caller() caller: Principal,
    @Req() req: SignedRequest,
  ) {
    // A delegation belongs to its parent's tenant (the domain sees to it); a root to the issuer's.
    let tenant: string | undefined;
    if (body.parent_id !== undefined) await this.access.mayDelegate(caller, body.parent_id, body.parent_token, req);
    else tenant = await this.access.issuingTenant(caller, body.tenant_id);
    const commandId = await this.idempotency.commandId({
      endpoint: 'POST /v1/capabilities',
      key,
      caller,
      request: body,
      proofScope: `capability:${body.parent_id}`,
    });
    const out = await this.authority.issue(toIssueCommand(body, commandId, tenant));
    if (!out.ok) throw refused(out.rejection);
    return wireJson(out.value);
  }

  @Post(':id/revoke')
  @HttpCode(200)
  @Access('issuer', 'possession')
  async revoke(@Param('id') id: string, @Body() body: RevokeCapabilityDto, @Caller() caller: Principal) {
    await this.access.mayRevoke(caller, id, body.token);
    const out = await this.authority.revoke(id);
    if (!out.ok) throw refused(out.rejection);
    // Before the answer: every replica refuses these tokens at the door from now on (ADR 0049).
    await this.revocations.published(rootOfCapability(id), out.value);
    return out.value;
  }

  @Get(':id')
  @Access('reader', 'capability')
  async capability(@Param('id') id: string, @Res({ passthrough: true }) res: HeaderSink, @Caller() caller: Principal) {
    staleHeader(res, await this.freshness.awaitTree(rootOfCapability(id)));
    const capability = await this.visibleCapability(id, budgetScopeOf(caller));
    if (!capability) throw notFound('capability', id);
    const time = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    const { issued_at_ms, expires_at_ms, revoked_at_ms, ...rest } = capability;
    return wireJson({
      ...rest,
      issued_at: time(issued_at_ms),
      expires_at: time(expires_at_ms),
      revoked_at: time(revoked_at_ms),
      revoked: revoked_at_ms !== null,
    });
  }

  @Get(':id/usage')
  @Access('reader', 'capability')
  async usage(
    @Param('id') id: string,
    @Query() query: UsageQueryDto,
    @Res({ passthrough: true }) res: HeaderSink,
    @Caller() caller: Principal,
  ) {
    staleHeader(res, await this.freshness.awaitTree(rootOfCapability(id)));
    const grants = await this.queries.usage(id, budgetScopeOf(caller));
    await this.refuseQuarantined(id, grants.length > 0);
    if (grants.length === 0) throw notFound('capability', id);
    // A grant with a reset shows its period (the current one, or the one asked for) and that period's figures.
    const period = query.period ?? 'current';
    const at = period === 'current' || period === 'previous' ? undefined : Date.parse(period);
    const periods = await this.authority.periodUsage(id, at, period === 'previous');
    const byIndex = new Map((periods ?? []).map((p) => [p.grant_index, p]));
    return wireJson({ id, grants: grants.map((g) => byIndex.get(g.grant_index) ?? g) });
  }

  @Get(':id/events')
  @Access('reader', 'capability')
  async events(
    @Param('id') id: string,
    @Query() query: EventsQueryDto,
    @Res({ passthrough: true }) res: HeaderSink,
    @Caller() caller: Principal,
  ) {
    staleHeader(res, await this.freshness.awaitTree(rootOfCapability(id)));
    const scope = budgetScopeOf(caller);
    if (!(await this.visibleCapability(id, scope))) throw notFound('capability', id);
    const events = await this.queries.mutations(id, query.grant_index, query.limit ?? EVENTS_LIMIT_DEFAULT, scope);
    return {
      events: events.map(({ occurred_at_ms, exposed_delta_units, realized_delta_units, ...rest }) => ({
        ...rest,
        occurred_at: new Date(occurred_at_ms).toISOString(),
        exposed_delta_units: moneyToWire(exposed_delta_units),
        realized_delta_units: moneyToWire(realized_delta_units),
      })),
    };
  }

  /** Holds of a capability (additive): lets an operator see that no reservation outlives its TTL (B20). */
  @Get(':id/holds')
  @Access('reader', 'capability')
  async holds(
    @Param('id') id: string,
    @Query() query: HoldsQueryDto,
    @Res({ passthrough: true }) res: HeaderSink,
    @Caller() caller: Principal,
  ) {
    staleHeader(res, await this.freshness.awaitTree(rootOfCapability(id)));
    const scope = budgetScopeOf(caller);
    // Like every read of a capability: one the caller may not see is as unknown as a missing one.
    if (!(await this.visibleCapability(id, scope))) throw notFound('capability', id);
    const statuses = query.status === undefined ? undefined : [query.status];
    const holds = await this.queries.holds(id, statuses, scope);
    return {
      holds: holds.map((h) => holdToWire(h, 'capability')),
    };
  }

  /** Recorded ambiguities and how the reconciler resolved them (B21), additive. */
  @Get(':id/ambiguities')
  @Access('reader', 'capability')
  async ambiguities(@Param('id') id: string, @Res({ passthrough: true }) res: HeaderSink, @Caller() caller: Principal) {
    staleHeader(res, await this.freshness.awaitTree(rootOfCapability(id)));
    const scope = budgetScopeOf(caller);
    if (!(await this.visibleCapability(id, scope))) throw notFound('capability', id);
    const rows = await this.queries.ambiguities(id, scope);
    return {
      ambiguities: rows.map((a) => ambiguityToWire(a, 'capability')),
    };
  }

  /** The capability as the caller may see it, once its tree has passed the quarantine check. */
  private async visibleCapability(id: string, scope: BudgetScope): Promise<CapabilityView | undefined> {
    const capability = await this.queries.capability(id, scope);
    await this.refuseQuarantined(id, capability !== undefined);
    return capability;
  }

  private refuseQuarantined(id: string, visible: boolean): Promise<void> {
    return this.freshness.refuseQuarantined(
      rootOfCapability(id),
      visible,
      async () => (await this.queries.capability(id, EVERY_TENANT)) !== undefined,
    );
  }
}
