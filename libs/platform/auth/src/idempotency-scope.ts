// Where a caller's Idempotency-Key lives (ADR 0023). A key is scoped to the caller's tenant,
// so two tenants never collide; who acts is part of the request's fingerprint, so another
// caller of the same tenant reusing a key is a conflict, never someone else's answer (or a
// token signed for someone else's capability). A caller with no credential, known only by a
// proof in the body, is scoped to what the proof names.
import type { Principal } from './principal.js';

export interface IdempotencyParty {
  /** `tenant:<id>` (and `/capability:<id>` for an agent), or undefined for a caller known only by a proof. */
  readonly scope: string | undefined;
  readonly actor: string;
}

export function idempotencyPartyOf(principal: Principal): IdempotencyParty {
  switch (principal.kind) {
    case 'operator':
      return { scope: `tenant:${principal.tenant_id}`, actor: `operator:${principal.via}:${principal.subject}` };
    case 'capability':
      // An agent's keys are its own: two agents of one tenant picking the same key never meet.
      return {
        scope: `tenant:${principal.tenant_id}/capability:${principal.capability_id}`,
        actor: `capability:${principal.capability_id}`,
      };
    case 'anonymous':
      return { scope: undefined, actor: 'possession' };
  }
}
