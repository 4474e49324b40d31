// Issuing, delegating and revoking capabilities. A child only narrows its parent:
// grants are subsets, expiry is no later, and siblings' shares fit the parent's capacity.
import type { IssueCapability, RevokeCapability } from './commands.js';
import { AMOUNT_MAX_UNITS, isAmount } from './assert.js';
import { accept, reject, type Decision, type Rejection } from './decision.js';
import { EventIds } from './ids.js';
import { capabilityCapacity } from './invariants.js';
import type { Capability, Grant, StoredGrant } from './model.js';
import { invalidReset, sameReset } from './periods.js';
import { descendants, type TreeState } from './state.js';

export function decideIssue(command: IssueCapability, state: TreeState): Decision {
  if (state.capabilities.has(command.capability_id))
    return reject('capability_exists', `capability ${command.capability_id} already exists`);
  const invalid = invalidGrants(command.grants, command.grants_max);
  if (invalid) return reject('grants_invalid', invalid);
  if (command.expires_at_ms <= command.now_ms) return reject('grants_invalid', 'expiry must be in the future');
  if (command.budget_units !== undefined && !isAmount(command.budget_units))
    return reject('amount_out_of_range', 'budget_share_units must be an amount from 0 to 2^63-1');
  if (command.parent_id === undefined) return issueRoot(command, state);
  const parent = state.capabilities.get(command.parent_id);
  if (!parent) return reject('parent_unknown', `parent capability ${command.parent_id} is unknown`);
  if (parent.root_id !== command.root_id)
    return reject('wrong_tree', `parent ${parent.id} belongs to tree ${parent.root_id}`);
  if (parent.revoked_at_ms !== undefined)
    return reject('capability_revoked', `parent capability ${parent.id} is revoked`);
  if (parent.expires_at_ms <= command.now_ms)
    return reject('capability_expired', `parent capability ${parent.id} has expired`);
  if (parent.depth + 1 > command.delegation_depth_max)
    return reject('delegation_too_deep', `delegation deeper than ${command.delegation_depth_max}`);
  if (command.expires_at_ms > parent.expires_at_ms)
    return reject('expiry_beyond_parent', 'a delegated capability cannot outlive its parent');
  const narrowed = narrowGrants(parent, command.grants);
  if (typeof narrowed === 'string') return reject('grant_not_narrowing', narrowed);
  const share = checkShare(state, parent, command.budget_units);
  if (share) return { ok: false, rejection: share };
  return accept({
    type: 'CapabilityIssued',
    event_id: EventIds.capabilityIssued(command.capability_id),
    data: {
      capability_id: command.capability_id,
      root_id: command.root_id,
      parent_id: parent.id,
      // A tree is one tenant's: a delegation belongs to its parent's tenant, whatever the command says.
      ...(parent.tenant_id === undefined ? {} : { tenant_id: parent.tenant_id }),
      subject_public_key: command.subject_public_key,
      ...(command.bind === undefined ? {} : { bind: command.bind }),
      issued_at_ms: command.now_ms,
      expires_at_ms: command.expires_at_ms,
      grants: narrowed,
      ...(command.budget_units === undefined ? {} : { budget_units: command.budget_units }),
      depth: parent.depth + 1,
    },
  });
}

function issueRoot(command: IssueCapability, state: TreeState): Decision {
  if (command.root_id !== command.capability_id || state.root_id !== undefined)
    return reject('wrong_tree', 'a root capability starts its own tree');
  return accept({
    type: 'CapabilityIssued',
    event_id: EventIds.capabilityIssued(command.capability_id),
    data: {
      capability_id: command.capability_id,
      root_id: command.root_id,
      ...(command.tenant_id === undefined ? {} : { tenant_id: command.tenant_id }),
      subject_public_key: command.subject_public_key,
      ...(command.bind === undefined ? {} : { bind: command.bind }),
      issued_at_ms: command.now_ms,
      expires_at_ms: command.expires_at_ms,
      grants: command.grants,
      ...(command.budget_units === undefined ? {} : { budget_units: command.budget_units }),
      depth: 0,
    },
  });
}

function invalidGrants(grants: readonly Grant[], grantsMax: number): string | undefined {
  if (grants.length === 0 || grants.length > grantsMax) return `a capability needs 1 to ${grantsMax} grants`;
  for (const [index, grant] of grants.entries()) {
    if (
      grant.max_invocations !== undefined &&
      !(Number.isSafeInteger(grant.max_invocations) && grant.max_invocations >= 0)
    )
      return `grants[${index}].max_invocations must be a non-negative integer`;
    if (!isAmount(grant.max_cost_per_invocation ?? 0n) || !isAmount(grant.max_total_cost_units ?? 0n))
      return `grants[${index}] cost limits must be amounts from 0 to 2^63-1`;
    const policy = invalidPolicy(grant);
    if (policy) return `grants[${index}].${policy}`;
  }
  return undefined;
}

const RATE_LIMIT_MAX = 1_000_000_000;

/** The spend-policy fields of a grant: a usable reset, positive rate limits, shares of 1 to 100 %. */
function invalidPolicy(grant: Grant): string | undefined {
  if (grant.reset !== undefined) {
    const reset = invalidReset(grant.reset);
    if (reset) return reset;
  }
  for (const [name, value] of Object.entries(grant.rate_limits ?? {}))
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1 && value <= RATE_LIMIT_MAX))
      return `rate_limits.${name} must be an integer from 1 to ${RATE_LIMIT_MAX}`;
  for (const percent of grant.alert_at_percent ?? [])
    if (!(Number.isSafeInteger(percent) && percent >= 1 && percent <= 100))
      return 'alert_at_percent entries must be integers from 1 to 100';
  if ((grant.alert_at_percent?.length ?? 0) > 0 && grant.max_total_cost_units === undefined)
    return 'alert_at_percent needs max_total_cost_units';
  if (grant.hold_cap_units !== undefined && !isAmount(grant.hold_cap_units))
    return 'hold_cap_units must be an amount from 0 to 2^63-1';
  return undefined;
}

/** Maps each child grant to the first parent grant that covers it, or explains why none does. */
function narrowGrants(parent: Capability, grants: readonly Grant[]): StoredGrant[] | string {
  const out: StoredGrant[] = [];
  for (const [index, grant] of grants.entries()) {
    const parentIndex = parent.grants.findIndex((candidate) => covers(candidate, grant));
    if (parentIndex < 0)
      return `grants[${index}] (${grant.server_id}/${grant.tool_name}) is not a subset of any parent grant`;
    // A child counts in its parent's periods: it inherits the parent grant's reset and may not cut time otherwise.
    const reset = parent.grants[parentIndex]!.reset;
    if (reset !== undefined && grant.reset !== undefined && !sameReset(reset, grant.reset))
      return `grants[${index}].reset must be the parent grant's reset`;
    out.push({ ...grant, ...(reset === undefined ? {} : { reset }), parent_grant_index: parentIndex });
  }
  return out;
}

function covers(parent: Grant, child: Grant): boolean {
  if (parent.server_id !== child.server_id) return false;
  if (parent.tool_name !== '*' && parent.tool_name !== child.tool_name) return false;
  if (parent.currency !== undefined && child.currency !== parent.currency) return false;
  return (
    narrows(parent.max_invocations, child.max_invocations) &&
    narrows(parent.max_cost_per_invocation, child.max_cost_per_invocation) &&
    narrows(parent.max_total_cost_units, child.max_total_cost_units)
  );
}

function narrows<T extends number | bigint>(parent: T | undefined, child: T | undefined): boolean {
  if (parent === undefined) return true;
  return child !== undefined && child <= parent;
}

function checkShare(state: TreeState, parent: Capability, share: bigint | undefined): Rejection | undefined {
  if (share === undefined) return undefined;
  let taken = 0n;
  for (const child of parent.children) taken += state.capabilities.get(child)?.budget_units ?? 0n;
  const capacity = capabilityCapacity(parent);
  if (capacity !== undefined && taken + share > capacity)
    return {
      code: 'budget_share_exceeds_parent',
      message: `siblings already hold ${taken} of the parent's ${capacity}; ${share} does not fit`,
    };
  // A parent without a capacity (or one of many grants' totals) leaves the shares unbounded: their sum must still be an amount.
  if (taken + share > AMOUNT_MAX_UNITS)
    return {
      code: 'amount_out_of_range',
      message: `budget_share_units: the siblings' shares would sum to ${taken + share}, past the largest amount, 2^63-1 minor units`,
    };
  return undefined;
}

export function decideRevoke(command: RevokeCapability, state: TreeState): Decision {
  const capability = state.capabilities.get(command.capability_id);
  if (!capability) return reject('capability_unknown', `capability ${command.capability_id} is unknown`);
  if (capability.revoked_at_ms !== undefined) return accept();
  const revoked = descendants(state, capability.id).filter(
    (id) => state.capabilities.get(id)?.revoked_at_ms === undefined,
  );
  return accept({
    type: 'CapabilityRevoked',
    event_id: EventIds.capabilityRevoked(capability.id),
    data: { capability_id: capability.id, revoked_ids: revoked, at_ms: command.now_ms },
  });
}
