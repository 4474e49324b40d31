// The state of one delegation tree, folded from its events. Collections are read-only
// maps; evolve replaces only the maps an event touches (copy on write).
import { PersistentMap } from './persistent-map.js';
import type { ReceiptChainHead } from './receipt-chain.js';
import {
  ZERO_USAGE,
  committedOf,
  type Ambiguity,
  type Capability,
  type GrantRef,
  type Hold,
  type StoredGrant,
  type MutationRecord,
  type Nonce,
  type ReceiptRecord,
  type Usage,
} from './model.js';
import type { RateWindow } from './rate-window.js';

export interface CapabilitySpend {
  readonly invocation_count: number;
  readonly committed_units: bigint;
  /** Charges beyond their holds booked on the capability's chains (ADR 0043): how far committed may pass its budget. */
  readonly overrun_units: bigint;
}

export interface TreeState {
  readonly root_id: string | undefined;
  readonly capabilities: ReadonlyMap<string, Capability>;
  /** Usage per (capability, grant), keyed by usageKey. Includes descendants' spend. */
  readonly usage: ReadonlyMap<string, Usage>;
  /** Committed spend per capability across all its grants, descendants included. */
  readonly spend: ReadonlyMap<string, CapabilitySpend>;
  readonly holds: PersistentMap<Hold>;
  /** Request id -> hold id of the (non-preflight) hold it took: the replay guard (B7). */
  readonly requests: PersistentMap<string>;
  /** Request id -> preflight hold id. */
  readonly preflights: PersistentMap<string>;
  readonly nonces: PersistentMap<Nonce>;
  readonly ambiguities: ReadonlyMap<string, Ambiguity>;
  readonly receipts: PersistentMap<ReceiptRecord>;
  /** Command id -> receipt id: a retried command gets its original answer. */
  readonly command_receipts: PersistentMap<string>;
  /** Receipt chains by receiptChainKey: the next index and what it links to (ADR 0030). */
  readonly receipt_chains: PersistentMap<ReceiptChainHead>;
  /** Mutation records per usage key, oldest first (B18). */
  readonly mutations: ReadonlyMap<string, readonly MutationRecord[]>;
  /** Usage per (capability, grant, period) for grants with a reset, keyed by periodKey. */
  readonly period_usage: PersistentMap<Usage>;
  /** Sliding admission windows per (capability, grant) with rate limits, keyed by usageKey. */
  readonly windows: PersistentMap<RateWindow>;
  /** Alerts already recorded, keyed by alertKey: each threshold fires once per period. */
  readonly alerts: PersistentMap<true>;
  readonly last_commit_index: number;
  /** The last applied event's place in its commit (commits carry several events). */
  readonly last_commit_position: number;
}

export function initialState(): TreeState {
  return {
    root_id: undefined,
    capabilities: new Map(),
    usage: new Map(),
    spend: new Map(),
    holds: PersistentMap.empty(),
    requests: PersistentMap.empty(),
    preflights: PersistentMap.empty(),
    nonces: PersistentMap.empty(),
    ambiguities: new Map(),
    receipts: PersistentMap.empty(),
    command_receipts: PersistentMap.empty(),
    receipt_chains: PersistentMap.empty(),
    mutations: new Map(),
    period_usage: PersistentMap.empty(),
    windows: PersistentMap.empty(),
    alerts: PersistentMap.empty(),
    last_commit_index: 0,
    last_commit_position: 0,
  };
}

export const usageKey = (ref: GrantRef): string => `${ref.capability_id}#${ref.grant_index}`;

export const periodKey = (ref: GrantRef, periodStartMs: number): string => `${usageKey(ref)}@${periodStartMs}`;

/** Alert `percent` (100 with kind exhausted) of a grant in a period (lifetime: no period). */
export const alertKey = (ref: GrantRef, periodStartMs: number | undefined, kind: string, percent: number): string =>
  `${usageKey(ref)}@${periodStartMs ?? 'lifetime'}:${kind}:${percent}`;

export function periodUsageOf(state: TreeState, ref: GrantRef, periodStartMs: number): Usage {
  return state.period_usage.get(periodKey(ref, periodStartMs)) ?? ZERO_USAGE;
}

/** The usage a grant's limits apply to: its period's for a grant with a reset, else its lifetime's. */
export function limitedUsageOf(state: TreeState, ref: GrantRef, periodStartMs: number | null | undefined): Usage {
  return periodStartMs === null || periodStartMs === undefined
    ? usageOf(state, ref)
    : periodUsageOf(state, ref, periodStartMs);
}

export function usageOf(state: TreeState, ref: GrantRef): Usage {
  return state.usage.get(usageKey(ref)) ?? ZERO_USAGE;
}

export function spendOf(state: TreeState, capabilityId: string): CapabilitySpend {
  return state.spend.get(capabilityId) ?? { invocation_count: 0, committed_units: 0n, overrun_units: 0n };
}

export function committedUsage(state: TreeState, ref: GrantRef): bigint {
  return committedOf(usageOf(state, ref));
}

/** The grant and every ancestor grant it narrows, nearest first. */
export function grantChain(state: TreeState, start: GrantRef): GrantRef[] {
  const chain: GrantRef[] = [];
  let ref: GrantRef | undefined = start;
  while (ref) {
    chain.push(ref);
    const capability: Capability | undefined = state.capabilities.get(ref.capability_id);
    const grant: StoredGrant | undefined = capability?.grants[ref.grant_index];
    ref =
      capability?.parent_id !== undefined && grant?.parent_grant_index !== undefined
        ? { capability_id: capability.parent_id, grant_index: grant.parent_grant_index }
        : undefined;
  }
  return chain;
}

/** The capability and its ancestors, nearest first. */
export function ancestry(state: TreeState, capabilityId: string): Capability[] {
  const out: Capability[] = [];
  let current = state.capabilities.get(capabilityId);
  while (current) {
    out.push(current);
    current = current.parent_id === undefined ? undefined : state.capabilities.get(current.parent_id);
  }
  return out;
}

export function descendants(state: TreeState, capabilityId: string): string[] {
  const out: string[] = [];
  const stack = [capabilityId];
  while (stack.length > 0) {
    const id = stack.pop()!;
    out.push(id);
    stack.push(...(state.capabilities.get(id)?.children ?? []));
  }
  return out;
}

/** Newest first, at most `limit` (B18). */
export function listMutations(state: TreeState, ref: GrantRef, limit: number): MutationRecord[] {
  const all = state.mutations.get(usageKey(ref)) ?? [];
  return all.slice(Math.max(0, all.length - limit)).reverse();
}
