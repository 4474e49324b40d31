// The receipt hash chain (http-api.md, "The tally command line"; ADR 0030). Each receipt
// carries `chain_index` (0, 1, 2 … in commit order among its chain's receipts) and
// `prev_hash`: base64url SHA-256 of the canonical JSON of the chain's previous receipt (the
// receipt as served and exported: its body with `signature`), or, for index 0, of the
// capability's CapabilityIssued event as the stream holds it (`{type, event_id, data}`, data
// in wire form). Both fields are inside the signed body. The authority writes the chain, its
// projection re-checks it on every replay, and `tally receipts verify` checks it offline.
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/** Base64url SHA-256 without padding, over the canonical JSON of `value`. */
export function canonicalHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('base64url');
}

/** What `prev_hash` of the next receipt covers: a signed receipt, body and signature together. */
export function receiptHash(receipt: Readonly<Record<string, unknown>>): string {
  return canonicalHash(receipt);
}

/** The anchor of a capability's chain: its issue event as the stream holds it. */
export function issueEventHash(event: { readonly event_id: string; readonly data: unknown }): string {
  return canonicalHash({ type: 'CapabilityIssued', event_id: event.event_id, data: event.data });
}

/**
 * The anchor of a chain whose tree has no issue event for it: receipts that name no
 * capability (a token that did not verify, a settlement of an unknown hold) form one chain
 * per tree, anchored to the SHA-256 of nothing.
 */
export const UNANCHORED_CHAIN_HASH = createHash('sha256').update('').digest('base64url');

/**
 * The chain a receipt belongs to, as a verifier groups them: its capability, or, for a
 * receipt naming none, `tree:<root>` of the tree its id names (`receipt:<root>:<command>`).
 */
export function receiptChainKey(receipt: Readonly<Record<string, unknown>>): string {
  const capability = receipt['capability_id'];
  if (typeof capability === 'string') return capability;
  const id = typeof receipt['id'] === 'string' ? receipt['id'] : '';
  return `tree:${/^receipt:([^:]*):/.exec(id)?.[1] ?? ''}`;
}
