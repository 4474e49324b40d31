// Issue, delegate and revoke capabilities, and the read side of a capability: usage per
// grant and its mutation events, newest first (B18).
import { createHash } from 'node:crypto';
import { moneyToWire } from '@tally/contracts';
import {
  committedOf,
  DEFAULT_TENANT_ID,
  listMutations,
  usageOf,
  type Capability,
  type Grant,
  type MutationRecord,
  type Rejection,
  tenantOfCapability,
  type TreeState,
} from '@tally/budget-domain';
import { rootOfCapability, type AuthorityContext } from './authority-context.js';
import { grantToWire, sealToken, type CapabilityClaims, type WireGrant } from './tokens.js';

export interface IssueCapabilityCommand {
  /** Optional retry key: the same command id issues the same capability once. */
  readonly command_id?: string;
  readonly subject_public_key: string;
  /** `subject_key`: spending calls must be signed with the subject's key (ADR 0011). */
  readonly bind?: 'subject_key';
  readonly ttl_seconds: number;
  readonly grants: readonly Grant[];
  /** With a parent this is a delegation, and it only narrows. */
  readonly parent_id?: string;
  /** The tenant of a root capability (default `default`); a delegation takes its parent's. */
  readonly tenant_id?: string;
  readonly budget_share_units?: bigint;
}

export interface IssuedCapability {
  readonly id: string;
  readonly root_id: string;
  readonly tenant_id: string;
  readonly token: string;
  readonly expires_at: string;
  readonly grants: readonly WireGrant[];
}

export type Result<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly rejection: Rejection };

export async function issueCapability(
  ctx: AuthorityContext,
  cmd: IssueCapabilityCommand,
): Promise<Result<IssuedCapability>> {
  const ttlMs = cmd.ttl_seconds * 1000;
  if (!(Number.isSafeInteger(cmd.ttl_seconds) && ttlMs > 0 && ttlMs <= ctx.limits.capabilityTtlMaxMs)) {
    return {
      ok: false,
      rejection: {
        code: 'grants_invalid',
        message: `ttl_seconds must be between 1 and ${ctx.limits.capabilityTtlMaxMs / 1000}`,
      },
    };
  }
  const suffix =
    cmd.command_id === undefined
      ? ctx.ids.newId()
      : createHash('sha256').update(cmd.command_id).digest('hex').slice(0, 24);
  const rootId = cmd.parent_id === undefined ? `cap_${suffix}` : rootOfCapability(cmd.parent_id);
  const id = cmd.parent_id === undefined ? rootId : `${rootId}--${suffix}`;
  const nowMs = ctx.clock.nowMs();
  const out = await ctx.trees.step(rootId, () => [
    {
      type: 'IssueCapability',
      capability_id: id,
      root_id: rootId,
      ...(cmd.parent_id === undefined
        ? { tenant_id: cmd.tenant_id ?? DEFAULT_TENANT_ID }
        : { parent_id: cmd.parent_id }),
      subject_public_key: cmd.subject_public_key,
      ...(cmd.bind === undefined ? {} : { bind: cmd.bind }),
      expires_at_ms: nowMs + ttlMs,
      grants: cmd.grants,
      ...(cmd.budget_share_units === undefined ? {} : { budget_units: cmd.budget_share_units }),
      now_ms: nowMs,
      delegation_depth_max: ctx.limits.delegationDepthMax,
      grants_max: ctx.limits.grantsPerCapabilityMax,
    },
  ]);
  const capability = out.state.capabilities.get(id);
  const retried = out.kind === 'rejected' && out.rejection.code === 'capability_exists' && cmd.command_id !== undefined;
  if (out.kind === 'rejected' && !retried) return { ok: false, rejection: out.rejection };
  if (!capability) throw new Error(`issuing ${id} could not be confirmed`);
  return { ok: true, value: describeIssued(ctx, capability) };
}

/** The token is sealed from the recorded facts, so a retried issue hands out the identical token. */
export function describeIssued(ctx: AuthorityContext, capability: Capability): IssuedCapability {
  const grants = capability.grants.map(grantToWire);
  const claims: CapabilityClaims = {
    id: capability.id,
    root_id: capability.root_id,
    ...(capability.parent_id === undefined ? {} : { parent_id: capability.parent_id }),
    // Absent on capabilities from before tenants, so their retried issue seals the identical token.
    ...(capability.tenant_id === undefined ? {} : { tenant_id: capability.tenant_id }),
    subject_public_key: capability.subject_public_key,
    ...(capability.bind === undefined ? {} : { bind: capability.bind }),
    issued_at_ms: capability.issued_at_ms,
    expires_at_ms: capability.expires_at_ms,
    grants,
    key_id: ctx.signer.keyId,
  };
  return {
    id: capability.id,
    root_id: capability.root_id,
    tenant_id: tenantOfCapability(capability),
    token: sealToken(ctx.signer, 'c1', claims),
    expires_at: new Date(capability.expires_at_ms).toISOString(),
    grants,
  };
}

export interface Revoked {
  readonly id: string;
  readonly revoked_at: string;
  readonly revoked_descendants: readonly string[];
}

export async function revokeCapability(ctx: AuthorityContext, capabilityId: string): Promise<Result<Revoked>> {
  const out = await ctx.trees.step(rootOfCapability(capabilityId), () => [
    { type: 'RevokeCapability', capability_id: capabilityId, now_ms: ctx.clock.nowMs() },
  ]);
  if (out.kind === 'rejected') return { ok: false, rejection: out.rejection };
  const capability = out.state.capabilities.get(capabilityId);
  if (!capability || capability.revoked_at_ms === undefined)
    throw new Error(`revoking ${capabilityId} could not be confirmed`);
  const descendants = [...out.state.capabilities.values()].filter(
    (c) => c.id !== capabilityId && c.revoked_at_ms === capability.revoked_at_ms && isBelow(out.state, c, capabilityId),
  );
  return {
    ok: true,
    value: {
      id: capabilityId,
      revoked_at: new Date(capability.revoked_at_ms).toISOString(),
      revoked_descendants: descendants.map((c) => c.id),
    },
  };
}

function isBelow(state: TreeState, capability: Capability, ancestorId: string): boolean {
  let parent = capability.parent_id;
  while (parent !== undefined) {
    if (parent === ancestorId) return true;
    parent = state.capabilities.get(parent)?.parent_id;
  }
  return false;
}

export interface GrantUsage {
  readonly grant_index: number;
  readonly invocation_count: number;
  readonly exposed_cost_units: bigint;
  readonly realized_cost_units: bigint;
  readonly committed_cost_units: bigint;
  /** What providers billed beyond their holds, booked as spend (ADR 0043). */
  readonly overrun_cost_units: bigint;
  readonly currency: string | null;
}

export async function capabilityUsage(
  ctx: AuthorityContext,
  capabilityId: string,
): Promise<{ id: string; grants: GrantUsage[] } | undefined> {
  const state = await ctx.trees.read(rootOfCapability(capabilityId));
  const capability = state.capabilities.get(capabilityId);
  if (!capability) return undefined;
  const grants = capability.grants.map((grant, index) => {
    const usage = usageOf(state, { capability_id: capabilityId, grant_index: index });
    return { grant_index: index, ...usage, committed_cost_units: committedOf(usage), currency: grant.currency ?? null };
  });
  return { id: capabilityId, grants };
}

export interface MutationEventView {
  readonly event_id: string;
  readonly kind: string;
  readonly hold_id: string;
  readonly request_id: string;
  readonly capability_id: string;
  readonly grant_index: number;
  readonly commit_index: number;
  readonly occurred_at: string;
  readonly invocation_delta: number;
  readonly exposed_delta_units: number | string;
  readonly realized_delta_units: number | string;
}

export async function capabilityEvents(
  ctx: AuthorityContext,
  capabilityId: string,
  query: { grant_index?: number; limit: number },
): Promise<MutationEventView[] | undefined> {
  const state = await ctx.trees.read(rootOfCapability(capabilityId));
  const capability = state.capabilities.get(capabilityId);
  if (!capability) return undefined;
  const limit = Math.max(1, Math.min(query.limit, ctx.limits.mutationListLimitMax));
  const indexes = query.grant_index === undefined ? capability.grants.map((_, i) => i) : [query.grant_index];
  const all: MutationRecord[] = indexes.flatMap((grant_index) =>
    listMutations(state, { capability_id: capabilityId, grant_index }, limit),
  );
  all.sort((a, b) => b.commit_index - a.commit_index);
  return all
    .slice(0, limit)
    .map((m) => ({
      ...m,
      occurred_at: new Date(m.at_ms).toISOString(),
      exposed_delta_units: moneyToWire(m.exposed_delta_units),
      realized_delta_units: moneyToWire(m.realized_delta_units),
    }))
    .map(({ at_ms: _at, ...rest }) => rest);
}
