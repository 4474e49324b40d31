// The authority's access decisions that depend on the resource, not just the caller's
// role: which tenant a new capability belongs to, possession proofs (a parent's token to
// delegate, a capability's or an ancestor's token to revoke), and the scope every read
// of capabilities, holds, receipts and usage puts into its query (another tenant's
// resource is the same 404 as a missing one).
import { Inject, Injectable } from '@nestjs/common';
import { rootOfCapability } from '@tally/budget-application';
import { BudgetQueries, EVERY_TENANT, type BudgetScope } from '@tally/budget-projections';
import type { CapabilityTokenVerifier, DirectoryView } from '@tally/directory-service';
import { SUBJECT_SIGNATURES } from '@tally/platform-app';
import {
  DEFAULT_TENANT,
  forbidden,
  hasRole,
  possessionRefused,
  readScopeOf,
  signatureRefused,
  type Principal,
  type SignedRequest,
  type SubjectSignatures,
} from '@tally/platform-auth';
import { Freshness } from './freshness.js';
import { notFound } from './http-support.js';
import { DIRECTORY_VIEW } from './tenants.controller.js';

export const CAPABILITY_TOKENS = Symbol('CAPABILITY_TOKENS');

/** Deepest delegation chain walked when looking for an ancestor (the domain allows 16). */
const ANCESTRY_MAX = 64;

/** What the caller may read, as the projection's query scope. */
export function budgetScopeOf(caller: Principal): BudgetScope {
  const scope = readScopeOf(caller);
  return {
    ...(scope.tenant_id === undefined ? {} : { tenantId: scope.tenant_id }),
    ...(scope.capability_id === undefined ? {} : { capabilityId: scope.capability_id }),
  };
}

@Injectable()
export class CapabilityAccess {
  constructor(
    @Inject(CAPABILITY_TOKENS) private readonly tokens: CapabilityTokenVerifier,
    @Inject(BudgetQueries) private readonly queries: BudgetQueries,
    @Inject(Freshness) private readonly freshness: Freshness,
    @Inject(DIRECTORY_VIEW) private readonly directory: DirectoryView,
    @Inject(SUBJECT_SIGNATURES) private readonly signatures: SubjectSignatures,
  ) {}

  /**
   * The tenant of a new root capability: the issuer's own; an admin may name any tenant the
   * directory knows (default `default`), one just created through another replica included.
   * Naming another tenant without being an admin is a 403.
   */
  async issuingTenant(caller: Principal, named: string | undefined): Promise<string> {
    if (!hasRole(caller, 'issuer'))
      throw possessionRefused(caller, 'an issuer key (or, to delegate, parent_id with the parent_token)');
    if (caller.role !== 'admin') {
      if (named !== undefined && named !== caller.tenant_id)
        throw forbidden('only an admin may issue in another tenant (tenant_id)');
      return caller.tenant_id;
    }
    const tenant = named ?? DEFAULT_TENANT;
    if (tenant !== DEFAULT_TENANT && !(await this.directory.knownTenant(tenant))) throw notFound('tenant', tenant);
    return tenant;
  }

  /**
   * Delegation: an issuer of the parent's tenant, or whoever presents the parent's own token;
   * a parent bound to its subject key delegates by token only on a request signed with that
   * key (ADR 0011).
   */
  async mayDelegate(
    caller: Principal,
    parentId: string,
    parentToken: string | undefined,
    req: SignedRequest,
  ): Promise<void> {
    const parent = parentToken === undefined ? undefined : this.tokens.claimsOf(parentToken);
    if (parent !== undefined && parent.id === parentId) {
      if (parent.bind !== 'subject_key') return;
      const refusal = await this.signatures.verify(req, parent.subject_public_key);
      if (refusal) throw signatureRefused(refusal);
      return;
    }
    if (!hasRole(caller, 'issuer'))
      throw possessionRefused(caller, "an issuer key, or the parent capability's token as parent_token,");
    await this.freshness.awaitTree(rootOfCapability(parentId));
    if (!(await this.queries.capability(parentId, budgetScopeOf(caller)))) throw notFound('capability', parentId);
  }

  /** Revocation: an issuer of its tenant, or the token of the capability or of one of its ancestors. */
  async mayRevoke(caller: Principal, capabilityId: string, token: string | undefined): Promise<void> {
    const presented = token === undefined ? undefined : this.tokens.claimsOf(token)?.id;
    if (presented !== undefined && (await this.ancestry(capabilityId)).includes(presented)) return;
    if (!hasRole(caller, 'issuer'))
      throw possessionRefused(caller, 'an issuer key, or the token of this capability or an ancestor as token,');
    await this.freshness.awaitTree(rootOfCapability(capabilityId));
    if (!(await this.queries.capability(capabilityId, budgetScopeOf(caller))))
      throw notFound('capability', capabilityId);
  }

  /** The capability and its ancestors, nearest first, as the projection knows them. */
  private async ancestry(capabilityId: string): Promise<string[]> {
    await this.freshness.awaitTree(rootOfCapability(capabilityId));
    const chain: string[] = [];
    let current: string | null = capabilityId;
    while (current !== null && chain.length < ANCESTRY_MAX) {
      const capability = await this.queries.capability(current, EVERY_TENANT);
      if (!capability) break;
      chain.push(capability.id);
      current = capability.parent_id;
    }
    return chain;
  }
}
