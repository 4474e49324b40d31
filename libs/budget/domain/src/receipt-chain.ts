// Where each receipt chain of the tree stands (ADR 0030): the index its next receipt takes
// and what that receipt's prev_hash covers. The domain does no hashing; it keeps the
// previous link itself, and the application hashes it when it writes the next receipt.
import { assert } from './assert.js';
import type { CapabilityIssuedData } from './events.js';
import type { ReceiptRecord } from './model.js';
import type { TreeState } from './state.js';

export type ChainLink =
  /** Index 0 of a capability's chain links to its issue event. */
  | { readonly kind: 'issued'; readonly event_id: string; readonly data: CapabilityIssuedData }
  | { readonly kind: 'receipt'; readonly receipt: ReceiptRecord }
  /** A chain whose tree holds no issue event for it (receipts naming no capability). */
  | { readonly kind: 'none' };

export interface ReceiptChainHead {
  readonly next_index: number;
  readonly previous: ChainLink;
}

const UNANCHORED: ReceiptChainHead = { next_index: 0, previous: { kind: 'none' } };

/** A receipt's chain: its capability's, or the tree's one chain of receipts that name no capability. */
export function receiptChainKey(capabilityId: unknown): string {
  return typeof capabilityId === 'string' ? capabilityId : '';
}

export function receiptChainOf(state: TreeState, key: string): ReceiptChainHead {
  return state.receipt_chains.get(key) ?? UNANCHORED;
}

/** The chain index a recorded body carries; undefined for receipts from before the chain. */
export function chainIndexOf(body: Readonly<Record<string, unknown>>): number | undefined {
  const index = body['chain_index'];
  return typeof index === 'number' ? index : undefined;
}

/** A new capability's chain starts at its issue event. */
export function chainOnIssue(state: TreeState, event_id: string, data: CapabilityIssuedData): TreeState {
  if (state.receipt_chains.has(data.capability_id)) return state;
  const head: ReceiptChainHead = { next_index: 0, previous: { kind: 'issued', event_id, data } };
  return { ...state, receipt_chains: state.receipt_chains.with(data.capability_id, head) };
}

/** A chained receipt moves its chain on by one; an unchained (older) receipt leaves it where it is. */
export function chainOnReceipt(state: TreeState, record: ReceiptRecord): TreeState {
  const index = chainIndexOf(record.body);
  if (index === undefined) return state;
  const key = receiptChainKey(record.body['capability_id']);
  const expected = receiptChainOf(state, key).next_index;
  assert(index === expected, `receipt ${record.receipt_id} has chain index ${index}, its chain is at ${expected}`);
  return {
    ...state,
    receipt_chains: state.receipt_chains.with(key, {
      next_index: index + 1,
      previous: { kind: 'receipt', receipt: record },
    }),
  };
}
