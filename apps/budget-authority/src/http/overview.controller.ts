// Additive reads across capabilities, for the web console (issue 12, ADR 0034): who the
// caller is, the capability tree with usage per grant, the holds open now, ambiguities
// waiting for the reconciler, and spend per time bucket. Every list is bounded and scoped
// in its query exactly as GET /v1/receipts is (budgetScopeOf: a key its tenant, an admin
// every tenant, a capability token its own capability).
import { Controller, Get, Inject, Query } from '@nestjs/common';
import { moneyToWire } from '@tally/contracts';
import { ambiguityToWire, holdToWire, OverviewQueries } from '@tally/budget-projections';
import { Access, Caller, type Principal } from '@tally/platform-auth';
import { budgetScopeOf } from './capability-access.js';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsISO8601, IsOptional, Max, Min } from 'class-validator';
import type { WireGrant } from '@tally/budget-projections';

export const OVERVIEW_LIMIT_MAX = 1_000;
const OVERVIEW_LIMIT_DEFAULT = 200;

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
type Bucket = keyof typeof BUCKET_MS;
/** A spend series spans at most this many buckets, so a minute series cannot ask for a year. */
const SPEND_BUCKETS_MAX = 10_000;

export class ListQueryDto {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(OVERVIEW_LIMIT_MAX) limit?: number;
}

export class CapabilityListQueryDto extends ListQueryDto {
  /** The `next_after` of the previous page. */
  @IsOptional() @Type(() => Number) @IsInt() @Min(0) after?: number;
}

export class AmbiguityListQueryDto extends ListQueryDto {
  /** `open` (default): waiting for the reconciler; `all`: resolved ones too. */
  @IsOptional() @IsIn(['open', 'all']) status?: 'open' | 'all';
}

export class SpendQueryDto {
  @IsOptional() @IsIn(Object.keys(BUCKET_MS)) bucket?: Bucket;
  /** RFC 3339; default: 60 buckets ago. */
  @IsOptional() @IsISO8601({ strict: true, strictSeparator: true }) since?: string;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

@Controller('v1')
export class OverviewController {
  constructor(@Inject(OverviewQueries) private readonly queries: OverviewQueries) {}

  /** Who the credential is: the console signs in with it and shows what it may do. Never the token itself. */
  @Get('me')
  @Access('reader', 'capability')
  me(@Caller() caller: Principal) {
    if (caller.kind === 'operator')
      return {
        kind: 'operator',
        role: caller.role,
        tenant_id: caller.tenant_id,
        subject: caller.subject,
        via: caller.via,
      };
    if (caller.kind === 'capability')
      return { kind: 'capability', capability_id: caller.capability_id, tenant_id: caller.tenant_id };
    return { kind: 'anonymous' };
  }

  /** Capabilities in issue order, each with its usage per grant; pass `next_after` back as `after`. */
  @Get('capabilities')
  @Access('reader', 'capability')
  async capabilities(@Query() query: CapabilityListQueryDto, @Caller() caller: Principal) {
    const limit = query.limit ?? OVERVIEW_LIMIT_DEFAULT;
    const rows = await this.queries.capabilities(budgetScopeOf(caller), query.after ?? 0, limit);
    const usage = await this.queries.usageOf(rows.map((r) => r.capabilityId));
    return {
      capabilities: rows.map((r) => ({
        id: r.capabilityId,
        root_id: r.rootId,
        parent_id: r.parentId,
        tenant_id: r.tenantId,
        depth: r.depth,
        issued_at: iso(r.issuedAtMs),
        expires_at: iso(r.expiresAtMs),
        revoked: r.revokedAtMs !== null,
        revoked_at: iso(r.revokedAtMs),
        grants: JSON.parse(r.grants) as WireGrant[],
        budget_units: r.budgetUnits === null ? null : moneyToWire(r.budgetUnits),
        usage: usage
          .filter((u) => u.capabilityId === r.capabilityId)
          .map((u) => ({
            grant_index: u.grantIndex,
            invocation_count: u.invocationCount,
            exposed_cost_units: moneyToWire(u.exposedCostUnits),
            realized_cost_units: moneyToWire(u.realizedCostUnits),
            committed_cost_units: moneyToWire(u.committedCostUnits),
            overrun_cost_units: moneyToWire(u.overrunCostUnits),
            currency: u.currency,
          })),
      })),
      next_after: rows.length === limit ? rows.at(-1)!.issuedSequence : null,
    };
  }

  /** The holds open now (authorized, captured or admitted), the ones that expire first first. */
  @Get('holds')
  @Access('reader', 'capability')
  async holds(@Query() query: ListQueryDto, @Caller() caller: Principal) {
    const rows = await this.queries.openHolds(budgetScopeOf(caller), query.limit ?? OVERVIEW_LIMIT_DEFAULT);
    return {
      holds: rows.map((h) => holdToWire(h, 'across')),
    };
  }

  /** Ambiguities, oldest first: by default only those waiting for the reconciler. */
  @Get('ambiguities')
  @Access('reader', 'capability')
  async ambiguities(@Query() query: AmbiguityListQueryDto, @Caller() caller: Principal) {
    const open = (query.status ?? 'open') === 'open';
    const rows = await this.queries.ambiguities(budgetScopeOf(caller), open, query.limit ?? OVERVIEW_LIMIT_DEFAULT);
    return {
      ambiguities: rows.map((a) => ambiguityToWire(a, 'across')),
    };
  }

  /** Realized cost per minute, hour or day and currency, oldest bucket first. */
  @Get('spend')
  @Access('reader', 'capability')
  async spend(@Query() query: SpendQueryDto, @Caller() caller: Principal) {
    const bucket: Bucket = query.bucket ?? 'hour';
    const size = BUCKET_MS[bucket];
    const now = Date.now();
    const floor = now - SPEND_BUCKETS_MAX * size;
    const since = Math.max(query.since === undefined ? now - 60 * size : Date.parse(query.since), floor);
    const series = await this.queries.spend(budgetScopeOf(caller), since, size);
    return {
      bucket,
      since: new Date(since).toISOString(),
      series: series.buckets.map((b) => ({
        start: new Date(b.start_ms).toISOString(),
        currency: b.currency,
        realized_units: moneyToWire(b.realized_units),
        entries: b.entries,
      })),
      truncated: series.truncated,
    };
  }
}
