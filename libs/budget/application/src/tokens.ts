// Signed tokens the authority hands out: capabilities, execution nonces and admission
// proofs. A token is `prefix.base64url(JSON claims).signature`; the signature is over the
// canonical JSON of the claims, so any JSON spelling of the same claims verifies.
import { moneyFromWire, moneyToWire } from '@tally/contracts';
import type { BudgetReset, Grant, NonceBinding, RateLimits } from '@tally/budget-domain';
import type { Signer } from './ports.js';

export interface WireGrant {
  readonly server_id: string;
  readonly tool_name: string;
  readonly max_invocations?: number;
  readonly max_cost_per_invocation?: number | string;
  readonly max_total_cost_units?: number | string;
  readonly currency?: string;
  readonly reset?: BudgetReset;
  readonly rate_limits?: RateLimits;
  readonly alert_at_percent?: readonly number[];
  readonly hold_cap_units?: number | string;
}

export interface CapabilityClaims {
  readonly id: string;
  readonly root_id: string;
  readonly parent_id?: string;
  /** The owning tenant (absent on capabilities from before tenants: `default`). */
  readonly tenant_id?: string;
  readonly subject_public_key: string;
  /** Present when the capability is bound to its subject key (ADR 0011). */
  readonly bind?: 'subject_key';
  readonly issued_at_ms: number;
  readonly expires_at_ms: number;
  readonly grants: readonly WireGrant[];
  readonly key_id: string;
}

export interface NonceClaims {
  readonly nonce_id: string;
  readonly binding: NonceBinding;
  readonly expires_at_ms: number;
  readonly key_id: string;
}

export interface AdmissionProofClaims {
  readonly hold_id: string;
  readonly request_id: string;
  readonly capability_id: string;
  readonly grant_index: number;
  readonly server_id: string;
  readonly tool_name: string;
  readonly parameters_hash: string;
  readonly capture_event_id: string;
  readonly capture_commit_index: number;
  readonly payment_authorization_id?: string;
  readonly issued_at_ms: number;
}

/** What the orchestrator needs before a monetary dispatch; without it, dispatch fails closed. */
export interface AdmissionProof {
  readonly claims: AdmissionProofClaims;
  readonly key_id: string;
  readonly signature: string;
}

export function sealToken<C extends { readonly key_id: string }>(signer: Signer, prefix: string, claims: C): string {
  return `${prefix}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signer.sign(claims, claims.key_id)}`;
}

/**
 * Tokens whose signature this signer has already checked, per signer. A capability is
 * presented on every Admit and an Ed25519 verify costs more than the rest of the token's
 * handling; the same token string always verifies the same way, so its claims are kept.
 * Only verified tokens are kept, and expiry is checked by the caller on every use.
 */
const verified = new WeakMap<Signer, Map<string, object>>();
/** Bound per signer: the oldest entry goes first. */
export const VERIFIED_TOKENS_MAX = 10_000;

/**
 * Undefined for anything malformed or not signed by this authority. `remember` keeps a
 * verified token for next time: for tokens presented again and again (capabilities), not
 * single-use ones (nonces), which would only push the others out.
 */
export function openToken<T extends { key_id: string }>(
  signer: Signer,
  prefix: string,
  token: string,
  remember = false,
): T | undefined {
  const key = `${prefix}:${token}`;
  let cache = verified.get(signer);
  const hit = cache?.get(key) as T | undefined;
  if (hit && signer.accepts?.(hit.key_id) !== false) return hit;
  if (hit) cache!.delete(key);
  const claims = verifyToken<T>(signer, prefix, token);
  if (claims === undefined || !remember) return claims;
  if (!cache) verified.set(signer, (cache = new Map()));
  cache.set(key, claims);
  if (cache.size > VERIFIED_TOKENS_MAX) cache.delete(cache.keys().next().value!);
  return claims;
}

function verifyToken<T extends { key_id: string }>(signer: Signer, prefix: string, token: string): T | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== prefix) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as T;
    if (claims === null || typeof claims !== 'object' || typeof claims.key_id !== 'string') return undefined;
    return signer.verify(claims, parts[2]!, claims.key_id) ? claims : undefined;
  } catch {
    return undefined;
  }
}

export function signProof(signer: Signer, claims: AdmissionProofClaims): AdmissionProof {
  const keyId = signer.keyId;
  return { claims, key_id: keyId, signature: signer.sign(claims, keyId) };
}

export function verifyProof(signer: Signer, proof: AdmissionProof): boolean {
  return signer.verify(proof.claims, proof.signature, proof.key_id);
}

export function grantToWire(grant: Grant): WireGrant {
  return {
    server_id: grant.server_id,
    tool_name: grant.tool_name,
    ...(grant.max_invocations === undefined ? {} : { max_invocations: grant.max_invocations }),
    ...(grant.max_cost_per_invocation === undefined
      ? {}
      : { max_cost_per_invocation: moneyToWire(grant.max_cost_per_invocation) }),
    ...(grant.max_total_cost_units === undefined
      ? {}
      : { max_total_cost_units: moneyToWire(grant.max_total_cost_units) }),
    ...(grant.currency === undefined ? {} : { currency: grant.currency }),
    ...policyFields(grant),
    ...(grant.hold_cap_units === undefined ? {} : { hold_cap_units: moneyToWire(grant.hold_cap_units) }),
  };
}

/** The spend-policy fields that are the same in the domain and on the wire. */
function policyFields(grant: Grant | WireGrant) {
  return {
    ...(grant.reset === undefined ? {} : { reset: grant.reset }),
    ...(grant.rate_limits === undefined ? {} : { rate_limits: grant.rate_limits }),
    ...(grant.alert_at_percent === undefined ? {} : { alert_at_percent: grant.alert_at_percent }),
  };
}

export function grantFromWire(grant: WireGrant): Grant {
  // Fails closed: a limit that is not an amount must not read as "no limit".
  const money = (value: number | string | undefined) => {
    if (value === undefined) return undefined;
    const amount = moneyFromWire(value);
    if (amount === undefined)
      throw new Error(`a grant limit is not an amount of minor units: ${JSON.stringify(value)}`);
    return amount;
  };
  const perInvocation = money(grant.max_cost_per_invocation);
  const total = money(grant.max_total_cost_units);
  return {
    server_id: grant.server_id,
    tool_name: grant.tool_name,
    ...(grant.max_invocations === undefined ? {} : { max_invocations: grant.max_invocations }),
    ...(perInvocation === undefined ? {} : { max_cost_per_invocation: perInvocation }),
    ...(total === undefined ? {} : { max_total_cost_units: total }),
    ...(grant.currency === undefined ? {} : { currency: grant.currency }),
    ...policyFields(grant),
    ...(grant.hold_cap_units === undefined ? {} : { hold_cap_units: money(grant.hold_cap_units)! }),
  };
}
