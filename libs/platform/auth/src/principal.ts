// The caller of a request, as the access guard established it. Handlers scope their
// queries with it: an operator sees its tenant (an admin every tenant), a capability token
// sees what belongs to its capability.

export type Role = 'admin' | 'issuer' | 'reader';
export const ROLES: readonly Role[] = ['admin', 'issuer', 'reader'];

/** The tenant that always exists; capabilities issued before tenants existed belong to it. */
export const DEFAULT_TENANT = 'default';

export interface OperatorPrincipal {
  readonly kind: 'operator';
  readonly role: Role;
  /** The tenant the key or token belongs to; an admin acts in every tenant. */
  readonly tenant_id: string;
  /** Who it is, for logs and audit: a key id, `bootstrap`, or the OIDC issuer and subject. */
  readonly subject: string;
  readonly via: 'bootstrap' | 'key' | 'oidc';
}

export interface CapabilityPrincipal {
  readonly kind: 'capability';
  readonly capability_id: string;
  readonly root_id: string;
  readonly tenant_id: string;
  readonly subject_public_key: string;
  readonly expires_at_ms: number;
  /** Whether every spending call must also carry an HTTP message signature by the subject key. */
  readonly bound_to_subject_key: boolean;
  /** The token itself: the orchestrator hands it on with the work it submits. */
  readonly token: string;
}

export interface AnonymousPrincipal {
  readonly kind: 'anonymous';
}

export type Principal = OperatorPrincipal | CapabilityPrincipal | AnonymousPrincipal;

export const ANONYMOUS: AnonymousPrincipal = Object.freeze({ kind: 'anonymous' });

const RANK: Record<Role, number> = { reader: 0, issuer: 1, admin: 2 };

export function hasRole(principal: Principal, role: Role): principal is OperatorPrincipal {
  return principal.kind === 'operator' && RANK[principal.role] >= RANK[role];
}

/** Whether this principal may act as `role` in `tenantId`: its own tenant, or any tenant for an admin. */
export function actsIn(principal: Principal, role: Role, tenantId: string): boolean {
  if (!hasRole(principal, role)) return false;
  return principal.role === 'admin' || principal.tenant_id === tenantId;
}

/**
 * What a query must be restricted to. `tenant_id` undefined means every tenant (an admin);
 * `capability_id` set means only what belongs to that capability (a capability token).
 */
export interface ReadScope {
  readonly tenant_id?: string;
  readonly capability_id?: string;
}

export function readScopeOf(principal: Principal): ReadScope {
  switch (principal.kind) {
    case 'operator':
      return principal.role === 'admin' ? {} : { tenant_id: principal.tenant_id };
    case 'capability':
      return { tenant_id: principal.tenant_id, capability_id: principal.capability_id };
    case 'anonymous':
      // The guard never lets an anonymous caller reach a scoped read; this scope matches nothing.
      return { tenant_id: '\u0000none', capability_id: '\u0000none' };
  }
}
