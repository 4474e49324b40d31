// The projection's re-check of the receipt hash chain (ADR 0030). It folds the chains the
// way the authority's domain does, from the stream alone: a capability's chain starts at
// its issue event, and each chained receipt must carry the next index and the hash of the
// one before. A receipt that does not is recorded `broken` (never thrown: it is a fact), and
// the chain goes on from it, so one break is reported once instead of on every later receipt.
import { In, type EntityManager } from 'typeorm';
import { issueEventHash, receiptChainKey, receiptHash, UNANCHORED_CHAIN_HASH } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import { bulkUpsert } from '@tally/platform-typeorm';
import { ReceiptChainRow } from './entities.js';

export type ChainCheck = 'linked' | 'broken' | 'unchained';

const ROWS_PER_STATEMENT_MAX = 500;

export class ReceiptChains {
  private readonly heads = new Map<string, ReceiptChainRow>();
  private readonly dirty = new Set<string>();

  constructor(private readonly manager: EntityManager) {}

  /** The chains the batch's issue events and receipts name. */
  static keysNamedBy(events: readonly StoredEvent[]): Set<string> {
    const keys = new Set<string>();
    for (const { event } of events) {
      const payload = event.payload as Record<string, unknown>;
      if (event.type === 'CapabilityIssued') keys.add(payload['capability_id'] as string);
      if (event.type === 'ReceiptRecorded') keys.add(receiptChainKey(payload['receipt'] as Record<string, unknown>));
    }
    return keys;
  }

  async preload(keys: ReadonlySet<string>): Promise<void> {
    if (keys.size === 0) return;
    for (const row of await this.manager.findBy(ReceiptChainRow, { chainKey: In([...keys]) }))
      this.heads.set(row.chainKey, row);
  }

  /** A capability's chain is anchored to its issue event as the stream holds it. */
  issued(stored: StoredEvent): void {
    const payload = JSON.parse(JSON.stringify(stored.event.payload)) as Record<string, unknown>;
    const key = payload['capability_id'] as string;
    if (this.heads.has(key)) return;
    const lastHash = issueEventHash({ event_id: stored.event.eventId, data: payload });
    this.put({ chainKey: key, rootId: stored.event.aggregateId, nextIndex: 0, lastHash });
  }

  /** Checks one signed receipt (body and signature) against its chain, and moves the chain on. */
  record(receipt: Readonly<Record<string, unknown>>, rootId: string): { check: ChainCheck; chainIndex: number | null } {
    const index = receipt['chain_index'];
    if (typeof index !== 'number') return { check: 'unchained', chainIndex: null };
    const key = receiptChainKey(receipt);
    const head = this.heads.get(key) ?? { chainKey: key, rootId, nextIndex: 0, lastHash: UNANCHORED_CHAIN_HASH };
    const linked = index === head.nextIndex && receipt['prev_hash'] === head.lastHash;
    this.put({ chainKey: key, rootId, nextIndex: index + 1, lastHash: receiptHash(receipt) });
    return { check: linked ? 'linked' : 'broken', chainIndex: index };
  }

  async flush(): Promise<void> {
    const rows = [...this.dirty].map((key) => this.heads.get(key)!);
    await bulkUpsert(this.manager, ReceiptChainRow, rows, {
      rowsPerStatementMax: ROWS_PER_STATEMENT_MAX,
      conflictColumns: ['chainKey'],
      updateColumns: ['nextIndex', 'lastHash'],
    });
  }

  private put(row: ReceiptChainRow): void {
    this.heads.set(row.chainKey, Object.assign(new ReceiptChainRow(), row));
    this.dirty.add(row.chainKey);
  }
}
