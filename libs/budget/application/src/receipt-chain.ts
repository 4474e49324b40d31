// The chain fields of the next receipt (ADR 0030): its index and the hash of what it links
// to, taken from the tree state the receipt is decided on, so group-committed receipts of
// one capability chain in commit order.
import { receiptChainKey, receiptChainOf, type ChainLink, type TreeState } from '@tally/budget-domain';
import { issueEventHash, receiptHash, UNANCHORED_CHAIN_HASH } from '@tally/contracts';
import { toWire } from './event-codec.js';

export interface ChainFields {
  readonly chain_index: number;
  readonly prev_hash: string;
}

export function nextChainFields(state: TreeState, capabilityId: string | null): ChainFields {
  const head = receiptChainOf(state, receiptChainKey(capabilityId));
  return { chain_index: head.next_index, prev_hash: linkHash(head.previous) };
}

function linkHash(link: ChainLink): string {
  switch (link.kind) {
    case 'none':
      return UNANCHORED_CHAIN_HASH;
    case 'issued':
      return issueEventHash({ event_id: link.event_id, data: toWire(link.data) });
    case 'receipt':
      return receiptHash({ ...link.receipt.body, signature: link.receipt.signature });
  }
}
