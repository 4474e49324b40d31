// Reads of the budget projection for the HTTP API: usage per grant, mutation events
// newest first with a limit (B18), signed receipts by id (B17), capabilities with their
// revocation state and parent links, open holds and ambiguities.
import type { DataSource } from 'typeorm';
import { AmbiguityRow, CapabilityRow, HoldRow, MutationRow, ReceiptRow, UsageRow } from './entities.js';
import { receiptPage, type ReceiptPage, type ReceiptPageFilter } from './receipt-pages.js';
import type { WireGrant } from './wire.js';

export interface UsageView {
  readonly grant_index: number;
  readonly invocation_count: number;
  readonly exposed_cost_units: bigint;
  readonly realized_cost_units: bigint;
  readonly committed_cost_units: bigint;
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

export class BudgetQueries {
  constructor(private readonly dataSource: DataSource) {}

  async capability(id: string): Promise<CapabilityView | undefined> {
    const row = await this.dataSource.manager.findOneBy(CapabilityRow, { capabilityId: id });
    if (!row) return undefined;
    const children = await this.dataSource.manager.find(CapabilityRow, {
      where: { parentId: id },
      order: { issuedSequence: 'ASC' },
      select: { capabilityId: true },
    });
    return {
      id: row.capabilityId,
      root_id: row.rootId,
      parent_id: row.parentId,
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

  async usage(capabilityId: string): Promise<UsageView[]> {
    const rows = await this.dataSource.manager.find(UsageRow, {
      where: { capabilityId },
      order: { grantIndex: 'ASC' },
    });
    return rows.map((r) => ({
      grant_index: r.grantIndex,
      invocation_count: r.invocationCount,
      exposed_cost_units: r.exposedCostUnits,
      realized_cost_units: r.realizedCostUnits,
      committed_cost_units: r.committedCostUnits,
      currency: r.currency,
    }));
  }

  /** Newest first (commit index, then position within the commit), at most `limit` (B18). */
  async mutations(capabilityId: string, grantIndex: number | undefined, limit: number): Promise<MutationView[]> {
    const where = grantIndex === undefined ? { capabilityId } : { capabilityId, grantIndex };
    const rows = await this.dataSource.manager.find(MutationRow, {
      where,
      order: { commitIndex: 'DESC', commitPosition: 'DESC' },
      take: limit,
    });
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

  async receipt(receiptId: string): Promise<ReceiptView | undefined> {
    const row = await this.dataSource.manager.findOneBy(ReceiptRow, { receiptId });
    if (!row) return undefined;
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

  /** Receipts of one request, oldest first: every decision on every path has one (B17). */
  async receiptsOfRequest(requestId: string): Promise<ReceiptView[]> {
    const rows = await this.dataSource.manager.find(ReceiptRow, {
      where: { requestId },
      order: { commitIndex: 'ASC' },
    });
    const out: ReceiptView[] = [];
    for (const row of rows) out.push((await this.receipt(row.receiptId))!);
    return out;
  }

  /** Receipts oldest first, a page at a time (exports). */
  receiptPage(filter: ReceiptPageFilter): Promise<ReceiptPage> {
    return receiptPage(this.dataSource, filter);
  }

  async holds(capabilityId: string, statuses?: readonly string[]): Promise<HoldRow[]> {
    const rows = await this.dataSource.manager.find(HoldRow, {
      where: { capabilityId },
      order: { authorizeCommitIndex: 'ASC' },
    });
    return statuses === undefined ? rows : rows.filter((r) => statuses.includes(r.status));
  }

  async ambiguities(capabilityId: string): Promise<AmbiguityRow[]> {
    return this.dataSource.manager.find(AmbiguityRow, { where: { capabilityId }, order: { recordedSequence: 'ASC' } });
  }
}
