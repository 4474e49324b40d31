// One projection batch: the rows it touches are loaded once, changed in memory event by
// event, and written back in a few multi-row statements inside the runner's transaction.
// The fold mirrors the domain's evolve: a hold's usage deltas land on its grant and on
// every ancestor grant of its chain (B18, B19), overruns included (ADR 0043); its mutation
// record lands on its own grant.
import { In, type EntityManager } from 'typeorm';
import { bulkInsert, bulkUpsert } from '@tally/platform-typeorm';
import { AmbiguityRow, CapabilityRow, HoldRow, MutationRow, ReceiptRow, UsageRow } from './entities.js';
import type { WireGrantRef } from './wire.js';

const ROWS_PER_STATEMENT_MAX = 500;

export const usageKey = (capabilityId: string, grantIndex: number): string => `${capabilityId}#${grantIndex}`;

export interface MutationDelta {
  readonly eventId: string;
  readonly kind: string;
  readonly cause: string | null;
  readonly commitIndex: number;
  readonly commitPosition: number;
  readonly occurredAtMs: number;
  readonly invocations: number;
  readonly exposedUnits: bigint;
  readonly realizedUnits: bigint;
  /** The part of realizedUnits a provider billed beyond the hold (ADR 0043). */
  readonly overrunUnits?: bigint;
}

export class LedgerBatch {
  readonly capabilities = new Map<string, CapabilityRow>();
  readonly usage = new Map<string, UsageRow>();
  readonly holds = new Map<string, HoldRow>();
  readonly ambiguities = new Map<string, AmbiguityRow>();
  readonly mutations: MutationRow[] = [];
  readonly receipts: ReceiptRow[] = [];
  private readonly dirty = {
    capabilities: new Set<string>(),
    usage: new Set<string>(),
    holds: new Set<string>(),
    ambiguities: new Set<string>(),
  };

  constructor(private readonly manager: EntityManager) {}

  /** Loads every existing row the batch names, so the fold never queries per event. */
  async preload(
    capabilityIds: ReadonlySet<string>,
    holdIds: ReadonlySet<string>,
    ambiguityIds: ReadonlySet<string>,
  ): Promise<void> {
    const m = this.manager;
    if (holdIds.size > 0)
      for (const row of await m.findBy(HoldRow, { holdId: In([...holdIds]) })) this.holds.set(row.holdId, row);
    const chainCapabilities = new Set(capabilityIds);
    for (const hold of this.holds.values()) for (const ref of chainOf(hold)) chainCapabilities.add(ref.capability_id);
    if (chainCapabilities.size > 0) {
      const ids = [...chainCapabilities];
      for (const row of await m.findBy(CapabilityRow, { capabilityId: In(ids) }))
        this.capabilities.set(row.capabilityId, row);
      for (const row of await m.findBy(UsageRow, { capabilityId: In(ids) }))
        this.usage.set(usageKey(row.capabilityId, row.grantIndex), row);
    }
    if (ambiguityIds.size > 0)
      for (const row of await m.findBy(AmbiguityRow, { ambiguityId: In([...ambiguityIds]) }))
        this.ambiguities.set(row.ambiguityId, row);
  }

  putCapability(row: CapabilityRow): void {
    this.capabilities.set(row.capabilityId, row);
    this.dirty.capabilities.add(row.capabilityId);
  }

  putUsage(row: UsageRow): void {
    const key = usageKey(row.capabilityId, row.grantIndex);
    this.usage.set(key, row);
    this.dirty.usage.add(key);
  }

  putHold(row: HoldRow): void {
    this.holds.set(row.holdId, row);
    this.dirty.holds.add(row.holdId);
  }

  putAmbiguity(row: AmbiguityRow): void {
    this.ambiguities.set(row.ambiguityId, row);
    this.dirty.ambiguities.add(row.ambiguityId);
  }

  /** Applies a hold's deltas to its whole chain and records the mutation on its own grant. */
  mutate(hold: HoldRow, delta: MutationDelta): void {
    for (const ref of chainOf(hold)) {
      const key = usageKey(ref.capability_id, ref.grant_index);
      const row = this.usage.get(key) ?? zeroUsage(hold.rootId, ref, null, delta.commitIndex);
      row.invocationCount += delta.invocations;
      row.exposedCostUnits += delta.exposedUnits;
      row.realizedCostUnits += delta.realizedUnits;
      row.overrunCostUnits += delta.overrunUnits ?? 0n;
      row.committedCostUnits = row.exposedCostUnits + row.realizedCostUnits;
      row.lastSequence = delta.commitIndex;
      this.putUsage(row);
    }
    this.mutations.push(
      Object.assign(new MutationRow(), {
        eventId: delta.eventId,
        rootId: hold.rootId,
        capabilityId: hold.capabilityId,
        grantIndex: hold.grantIndex,
        kind: delta.kind,
        holdId: hold.holdId,
        requestId: hold.requestId,
        cause: delta.cause,
        commitIndex: delta.commitIndex,
        commitPosition: delta.commitPosition,
        occurredAtMs: delta.occurredAtMs,
        invocationDelta: delta.invocations,
        exposedDeltaUnits: delta.exposedUnits,
        realizedDeltaUnits: delta.realizedUnits,
      }),
    );
  }

  async flush(): Promise<void> {
    const m = this.manager;
    const rows = <T>(map: Map<string, T>, keys: Set<string>) => [...keys].map((k) => map.get(k)!);
    const opts = { rowsPerStatementMax: ROWS_PER_STATEMENT_MAX };
    await bulkUpsert(m, CapabilityRow, rows(this.capabilities, this.dirty.capabilities), {
      ...opts,
      conflictColumns: ['capabilityId'],
      updateColumns: ['revokedAtMs', 'revokedVia'],
    });
    await bulkUpsert(m, UsageRow, rows(this.usage, this.dirty.usage), {
      ...opts,
      conflictColumns: ['capabilityId', 'grantIndex'],
      updateColumns: [
        'invocationCount',
        'exposedCostUnits',
        'realizedCostUnits',
        'committedCostUnits',
        'overrunCostUnits',
        'currency',
        'lastSequence',
      ],
    });
    await bulkUpsert(m, HoldRow, rows(this.holds, this.dirty.holds), {
      ...opts,
      conflictColumns: ['holdId'],
      updateColumns: ['status', 'captureCommitIndex', 'realizedUnits', 'exposureUnits', 'lastSequence'],
    });
    await bulkUpsert(m, AmbiguityRow, rows(this.ambiguities, this.dirty.ambiguities), {
      ...opts,
      conflictColumns: ['ambiguityId'],
      updateColumns: ['resolution', 'railState', 'resolvedSequence'],
    });
    await bulkInsert(m, MutationRow, this.mutations, opts);
    await bulkInsert(m, ReceiptRow, this.receipts, opts);
  }
}

export function chainOf(hold: HoldRow): WireGrantRef[] {
  return JSON.parse(hold.chain) as WireGrantRef[];
}

export function zeroUsage(rootId: string, ref: WireGrantRef, currency: string | null, sequence: number): UsageRow {
  return Object.assign(new UsageRow(), {
    capabilityId: ref.capability_id,
    grantIndex: ref.grant_index,
    rootId,
    invocationCount: 0,
    exposedCostUnits: 0n,
    realizedCostUnits: 0n,
    committedCostUnits: 0n,
    overrunCostUnits: 0n,
    currency,
    lastSequence: sequence,
  });
}
