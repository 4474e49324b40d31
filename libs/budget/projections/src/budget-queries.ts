// Reads of the budget projection for the HTTP API: usage per grant, mutation events
// newest first with a limit (B18), signed receipts by id (B17), capabilities with their
// revocation state and parent links, open holds and ambiguities.
import type { DataSource, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { AmbiguityRow, CapabilityRow, HoldRow, MutationRow, ReceiptRow, UsageRow } from './entities.js';
import { receiptPage, type ReceiptPage, type ReceiptPageFilter } from './receipt-pages.js';
import type { WireGrant } from './wire.js';

export interface UsageView {
  readonly grant_index: number;
  readonly invocation_count: number;
  readonly exposed_cost_units: bigint;
  readonly realized_cost_units: bigint;
  readonly committed_cost_units: bigint;
  /** What providers billed beyond their holds, booked as spend (ADR 0043); 0 when none. */
  readonly overrun_cost_units: bigint;
  readonly currency: string | null;
}

export interface MutationView {
  readonly event_id: string;
  readonly kind: string;
  readonly hold_id: string;
  readonly request_id: string;
  readonly capability_id: string;
  readonly grant_index: number;
  readonly commit_index: number;
  readonly occurred_at_ms: number;
  readonly cause: string | null;
  readonly invocation_delta: number;
  readonly exposed_delta_units: bigint;
  readonly realized_delta_units: bigint;
}

export interface CapabilityView {
  readonly id: string;
  readonly root_id: string;
  readonly parent_id: string | null;
  readonly tenant_id: string;
  readonly subject_public_key: string;
  readonly depth: number;
  readonly issued_at_ms: number;
  readonly expires_at_ms: number;
  readonly grants: WireGrant[];
  readonly budget_units: bigint | null;
  readonly revoked_at_ms: number | null;
  readonly revoked_via: string | null;
  readonly children: string[];
}

export interface ReceiptView {
  readonly body: Record<string, unknown>;
  readonly signature: string;
  readonly key_id: string;
  readonly signature_check: string;
  /** The projection's re-check of its hash chain: linked, broken or unchained (ADR 0030). */
  readonly chain_check: string;
  readonly decision: Record<string, unknown> | null;
  readonly commit_index: number;
}

/**
 * Whose rows a read may return, as conditions of the query itself: `tenantId` undefined is
 * every tenant (an admin, or the service itself); `capabilityId` only that capability's
 * (a capability token). Rows naming no capability (an Admit whose token did not verify)
 * belong to no tenant, so only an unscoped read sees them.
 */
export interface BudgetScope {
  readonly tenantId?: string;
  readonly capabilityId?: string;
}

/** The service's own reads (ancestry walks, replays): every tenant. */
export const EVERY_TENANT: BudgetScope = Object.freeze({});

/** Adds the scope's conditions to a query over a table with a capability_id column. */
export function scopeQuery<T extends ObjectLiteral>(
  q: SelectQueryBuilder<T>,
  alias: string,
  scope: BudgetScope,
): SelectQueryBuilder<T> {
  if (scope.capabilityId !== undefined)
    q.andWhere(`${alias}.capabilityId = :scopeCapability`, { scopeCapability: scope.capabilityId });
  if (scope.tenantId !== undefined)
    q.innerJoin(
      CapabilityRow,
      'scope_c',
      `scope_c.capabilityId = ${alias}.capabilityId AND scope_c.tenantId = :scopeTenant`,
      {
        scopeTenant: scope.tenantId,
      },
    );
  return q;
}

export class BudgetQueries {
  constructor(private readonly dataSource: DataSource) {}

  private select<T extends ObjectLiteral>(entity: new () => T, alias: string, scope: BudgetScope) {
    return scopeQuery(this.dataSource.manager.createQueryBuilder(entity, alias), alias, scope);
  }

  async capability(id: string, scope: BudgetScope): Promise<CapabilityView | undefined> {
    const row = await this.select(CapabilityRow, 'c', scope).andWhere('c.capabilityId = :id', { id }).getOne();
    if (!row) return undefined;
    const children = await this.dataSource.manager.find(CapabilityRow, {
      where: { parentId: id, tenantId: row.tenantId },
      order: { issuedSequence: 'ASC' },
      select: { capabilityId: true },
    });
    return {
      id: row.capabilityId,
      root_id: row.rootId,
      parent_id: row.parentId,
      tenant_id: row.tenantId,
      subject_public_key: row.subjectPublicKey,
      depth: row.depth,
      issued_at_ms: row.issuedAtMs,
      expires_at_ms: row.expiresAtMs,
      grants: JSON.parse(row.grants) as WireGrant[],
      budget_units: row.budgetUnits,
      revoked_at_ms: row.revokedAtMs,
      revoked_via: row.revokedVia,
      children: children.map((c) => c.capabilityId),
    };
  }

  async usage(capabilityId: string, scope: BudgetScope): Promise<UsageView[]> {
    const rows = await this.select(UsageRow, 'u', scope)
      .andWhere('u.capabilityId = :capabilityId', { capabilityId })
      .orderBy('u.grantIndex', 'ASC')
      .getMany();
    return rows.map((r) => ({
      grant_index: r.grantIndex,
      invocation_count: r.invocationCount,
      exposed_cost_units: r.exposedCostUnits,
      realized_cost_units: r.realizedCostUnits,
      committed_cost_units: r.committedCostUnits,
      overrun_cost_units: r.overrunCostUnits,
      currency: r.currency,
    }));
  }

  /** Newest first (commit index, then position within the commit), at most `limit` (B18). */
  async mutations(
    capabilityId: string,
    grantIndex: number | undefined,
    limit: number,
    scope: BudgetScope,
  ): Promise<MutationView[]> {
    const q = this.select(MutationRow, 'm', scope).andWhere('m.capabilityId = :capabilityId', { capabilityId });
    if (grantIndex !== undefined) q.andWhere('m.grantIndex = :grantIndex', { grantIndex });
    const rows = await q.orderBy('m.commitIndex', 'DESC').addOrderBy('m.commitPosition', 'DESC').take(limit).getMany();
    return rows.map((r) => ({
      event_id: r.eventId,
      kind: r.kind,
      hold_id: r.holdId,
      request_id: r.requestId,
      capability_id: r.capabilityId,
      grant_index: r.grantIndex,
      commit_index: r.commitIndex,
      occurred_at_ms: r.occurredAtMs,
      cause: r.cause,
      invocation_delta: r.invocationDelta,
      exposed_delta_units: r.exposedDeltaUnits,
      realized_delta_units: r.realizedDeltaUnits,
    }));
  }

  async receipt(receiptId: string, scope: BudgetScope): Promise<ReceiptView | undefined> {
    const row = await this.select(ReceiptRow, 'r', scope).andWhere('r.receiptId = :receiptId', { receiptId }).getOne();
    return row ? receiptView(row) : undefined;
  }

  /** Receipts of one request, oldest first: every decision on every path has one (B17). */
  async receiptsOfRequest(requestId: string, scope: BudgetScope): Promise<ReceiptView[]> {
    const rows = await this.select(ReceiptRow, 'r', scope)
      .andWhere('r.requestId = :requestId', { requestId })
      .orderBy('r.commitIndex', 'ASC')
      .addOrderBy('r.commitPosition', 'ASC')
      .getMany();
    return rows.map(receiptView);
  }

  /** Receipts oldest first, a page at a time (exports). */
  receiptPage(filter: ReceiptPageFilter): Promise<ReceiptPage> {
    return receiptPage(this.dataSource, filter);
  }

  async holds(capabilityId: string, statuses: readonly string[] | undefined, scope: BudgetScope): Promise<HoldRow[]> {
    const q = this.select(HoldRow, 'h', scope).andWhere('h.capabilityId = :capabilityId', { capabilityId });
    if (statuses !== undefined) q.andWhere('h.status IN (:...statuses)', { statuses: [...statuses] });
    return q.orderBy('h.authorizeCommitIndex', 'ASC').getMany();
  }

  async ambiguities(capabilityId: string, scope: BudgetScope): Promise<AmbiguityRow[]> {
    return this.select(AmbiguityRow, 'a', scope)
      .andWhere('a.capabilityId = :capabilityId', { capabilityId })
      .orderBy('a.recordedSequence', 'ASC')
      .getMany();
  }
}

function receiptView(row: ReceiptRow): ReceiptView {
  return {
    body: JSON.parse(row.body) as Record<string, unknown>,
    signature: row.signature,
    key_id: row.keyId,
    signature_check: row.signatureCheck,
    chain_check: row.chainCheck,
    decision: row.decision === null ? null : (JSON.parse(row.decision) as Record<string, unknown>),
    commit_index: row.commitIndex,
  };
}
