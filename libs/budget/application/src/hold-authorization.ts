// Who may settle or increase a hold (http-api.md, Credentials): the holder of its admission
// proof, the capability it was admitted on, or an operator of its tenant. Every Settle and
// Increase carries one of these, over HTTP and over NATS alike, and the authority checks it
// against the hold itself before anything is applied. A refusal is answered exactly like a
// hold that does not exist, so a caller learns nothing about another tenant's holds.
import { tenantOfCapability, type Hold, type TreeState } from '@tally/budget-domain';
import type { AuthorityContext } from './authority-context.js';
import { canonicalJson } from '@tally/contracts';
import { answeredCommand } from './receipts.js';
import { openToken, verifyProof, type AdmissionProof, type CapabilityClaims } from './tokens.js';

export type HoldAuthorization =
  /** An operator key or OIDC token the HTTP guard verified: `tenant_id` undefined is an admin (every tenant). */
  | { readonly kind: 'operator'; readonly tenant_id?: string }
  /** The admission proof the authority signed for this hold. */
  | { readonly kind: 'admission_proof'; readonly proof: AdmissionProof }
  /** The token of the capability the hold was admitted on. */
  | { readonly kind: 'capability_token'; readonly token: string };

/** The authorization a wire command carries: its admission proof, else its capability token, else none. */
export function authorizationFromWire(wire: {
  readonly admission_proof?: {
    readonly claims: Record<string, unknown>;
    readonly key_id: string;
    readonly signature: string;
  };
  readonly token?: string;
}): HoldAuthorization | undefined {
  if (wire.admission_proof !== undefined)
    return { kind: 'admission_proof', proof: wire.admission_proof as unknown as AdmissionProof };
  if (wire.token !== undefined) return { kind: 'capability_token', token: wire.token };
  return undefined;
}

/** Whether `authorization` lets its holder act on `hold`; no authorization never does (fail closed). */
export function mayActOnHold(
  ctx: AuthorityContext,
  state: TreeState,
  hold: Hold,
  authorization: HoldAuthorization | undefined,
): boolean {
  switch (authorization?.kind) {
    case undefined:
      return false;
    case 'operator': {
      if (authorization.tenant_id === undefined) return true;
      const capability = state.capabilities.get(hold.capability_id);
      return capability !== undefined && tenantOfCapability(capability) === authorization.tenant_id;
    }
    case 'admission_proof': {
      const proof = authorization.proof;
      // The hold id is inside the signed claims: a proof for another hold, or an edited one, fails here.
      return (
        typeof proof.claims === 'object' &&
        proof.claims !== null &&
        proof.claims.hold_id === hold.hold_id &&
        (isRecordedProof(state, hold, proof) || verifyProof(ctx.signer, proof))
      );
    }
    case 'capability_token': {
      const claims = openToken<CapabilityClaims>(ctx.signer, 'c1', authorization.token, true);
      return claims !== undefined && claims.id === hold.capability_id && claims.expires_at_ms > ctx.clock.nowMs();
    }
  }
}

/**
 * Whether `proof` is, byte for byte, the admission proof this tree recorded with the hold's
 * admitting receipt. Then its signature is this authority's own, already on its ledger, and
 * verifying it again is redundant (issue 13: a Settle used to spend an Ed25519 verify on
 * it). Anything else, e.g. a proof from a resumed command, is verified as before.
 */
function isRecordedProof(state: TreeState, hold: Hold, proof: AdmissionProof): boolean {
  if (hold.command_id === undefined) return false;
  const recorded = answeredCommand(state, hold.command_id)?.decision?.['admission_proof'] as AdmissionProof | undefined;
  if (recorded === undefined || recorded.signature !== proof.signature || recorded.key_id !== proof.key_id)
    return false;
  try {
    return canonicalJson(recorded.claims) === canonicalJson(proof.claims);
  } catch {
    return false;
  }
}
