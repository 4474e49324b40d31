// The authority's access decisions that depend on the resource, not just the caller's
// role: possession proofs (a parent's token to delegate, a capability's or an ancestor's
// token to revoke) and what a capability token may read (its own capability's resources).
import { Inject, Injectable } from '@nestjs/common';
import { rootOfCapability } from '@tally/budget-application';
import { BudgetQueries } from '@tally/budget-projections';
import type { CapabilityTokenVerifier } from '@tally/directory-service';
import { SUBJECT_SIGNATURES } from '@tally/platform-app';
import {
  hasRole,
  possessionRefused,
  signatureRefused,
  type Principal,
  type SignedRequest,
  type SubjectSignatures,
} from '@tally/platform-auth';
import { Freshness } from './freshness.js';

export const CAPABILITY_TOKENS = Symbol('CAPABILITY_TOKENS');

/** Deepest delegation chain walked when looking for an ancestor (the domain allows 16). */
const ANCESTRY_MAX = 64;

@Injectable()
export class CapabilityAccess {
  constructor(
    @Inject(CAPABILITY_TOKENS) private readonly tokens: CapabilityTokenVerifier,
    @Inject(BudgetQueries) private readonly queries: BudgetQueries,
    @Inject(Freshness) private readonly freshness: Freshness,
    @Inject(SUBJECT_SIGNATURES) private readonly signatures: SubjectSignatures,
  ) {}

  /**
   * Delegation: an issuer, or whoever presents the parent's own token; a parent bound to
   * its subject key delegates only on a request signed with that key (ADR 0011).
   */
  async mayDelegate(
    caller: Principal,
    parentId: string,
    parentToken: string | undefined,
    req: SignedRequest,
  ): Promise<void> {
    if (hasRole(caller, 'issuer')) return;
    const parent = parentToken === undefined ? undefined : this.tokens.claimsOf(parentToken);
    if (parent === undefined || parent.id !== parentId)
      throw possessionRefused(caller, "an issuer key, or the parent capability's token as parent_token,");
    if (parent.bind !== 'subject_key') return;
    const refusal = await this.signatures.verify(req, parent.subject_public_key);
    if (refusal) throw signatureRefused(refusal);
  }

  /** Revocation: an issuer, or the token of the capability or of one of its ancestors. */
  async mayRevoke(caller: Principal, capabilityId: string, token: string | undefined): Promise<void> {
    if (hasRole(caller, 'issuer')) return;
    const presented = token === undefined ? undefined : this.tokens.claimsOf(token)?.id;
    if (presented !== undefined && (await this.ancestry(capabilityId)).includes(presented)) return;
    throw possessionRefused(caller, 'an issuer key, or the token of this capability or an ancestor as token,');
  }

  /** A capability token reads only what belongs to its own capability. */
  mayRead(caller: Principal, capabilityId: string): boolean {
    return caller.kind !== 'capability' || caller.capability_id === capabilityId;
  }

  /** The capability and its ancestors, nearest first, as the projection knows them. */
  private async ancestry(capabilityId: string): Promise<string[]> {
    await this.freshness.awaitTree(rootOfCapability(capabilityId));
    const chain: string[] = [];
    let current: string | null = capabilityId;
    while (current !== null && chain.length < ANCESTRY_MAX) {
      const capability = await this.queries.capability(current);
      if (!capability) break;
      chain.push(capability.id);
      current = capability.parent_id;
    }
    return chain;
  }
}
