// What a caller of the orchestrator's API may read, as a query scope: an operator its
// tenant (an admin everything), a capability token the units submitted with it.
import { tokenFingerprint } from '@tally/contracts';
import type { WorkScope } from '@tally/orchestrator-projections';
import type { Principal } from '@tally/platform-auth';

export const CAPABILITY_TOKENS = Symbol('CAPABILITY_TOKENS');

export function workScopeOf(caller: Principal): WorkScope {
  switch (caller.kind) {
    case 'operator':
      return caller.role === 'admin' ? {} : { tenant_id: caller.tenant_id };
    case 'capability':
      return { tenant_id: caller.tenant_id, token_fingerprint: tokenFingerprint(caller.token) };
    case 'anonymous':
      // Never reached (the guard refuses anonymous reads); a scope that matches nothing.
      return { tenant_id: '\u0000', token_fingerprint: '\u0000' };
  }
}
