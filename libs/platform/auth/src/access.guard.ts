// The one guard of every HTTP route. It reads the route's @Access rules, authenticates the
// credential the request carries, and lets the call through only when the principal's kind
// and role fit a rule. Tenant scope is not decided here: handlers put it into their queries.
import { createParamDecorator, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ProblemException } from '@tally/platform-nest';
import { accessOf, type AccessRule } from './access.js';
import { isRefusal, type Authenticator } from './authenticator.js';
import { presentedCredential, type RequestLike } from './credentials.js';
import {
  isSubjectSigned,
  type SignedRequest,
  type SignatureRefusal,
  type SubjectSignatures,
} from './message-signatures.js';
import { acceptSignatureOf, SIGNED_COMPONENTS } from './signature-coverage.js';
import { ANONYMOUS, hasRole, type CapabilityPrincipal, type Principal } from './principal.js';

interface GuardedRequest extends RequestLike, SignedRequest {
  principal?: Principal;
}

export const WWW_AUTHENTICATE = 'Bearer realm="tally"';

export function unauthorized(message: string): ProblemException {
  return new ProblemException(401, 'unauthorized', 'A valid credential is required', [], message, {
    'WWW-Authenticate': WWW_AUTHENTICATE,
  });
}

/** A capability whose token, parent or root was revoked (ADR 0049): refused before the ledger is asked. */
export function tokenRevoked(message: string): ProblemException {
  return new ProblemException(401, 'token_revoked', 'The capability was revoked', [], message, {
    'WWW-Authenticate': WWW_AUTHENTICATE,
  });
}

export function forbidden(message = 'this credential may not make this call'): ProblemException {
  return new ProblemException(403, 'forbidden', 'The credential may not do this', [], message);
}

/** For handlers whose rule is `possession`: no valid proof and no fitting credential. */
export function possessionRefused(principal: Principal, what: string): ProblemException {
  return principal.kind === 'anonymous' ? unauthorized(`${what} is required`) : forbidden(`${what} is required`);
}

/** A bound capability's request that does not prove possession of its subject key (ADR 0011). */
export function signatureRefused(refusal: SignatureRefusal): ProblemException {
  if (refusal.code === 'signatures_unavailable')
    return new ProblemException(
      503,
      'credentials_unavailable',
      'Credentials cannot be checked now',
      [],
      refusal.message,
    );
  return new ProblemException(401, refusal.code, 'Proof of possession is required', [], refusal.message, {
    'WWW-Authenticate': WWW_AUTHENTICATE,
    // What this request's signature must cover (ADR 0049), the base when the refusal does not say.
    'Accept-Signature': acceptSignatureOf(refusal.components ?? SIGNED_COMPONENTS),
  });
}

export class AccessGuard implements CanActivate {
  constructor(
    private readonly authenticator: Authenticator,
    /** Without it, a bound capability can never pass a signed route (fail closed). */
    private readonly signatures?: SubjectSignatures,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    // Command handlers over NATS are reached only by services NATS lets publish there.
    if (context.getType() !== 'http') return true;
    const rules = accessOf(context.getHandler());
    // The boot refuses undeclared routes; this only guards against a route added after boot.
    if (rules === undefined) throw forbidden('this route declares no access');
    if (rules[0] === 'public') return true;
    const req = context.switchToHttp().getRequest<GuardedRequest>();
    req.principal = await this.principalOf(req, rules);
    if (req.principal.kind === 'capability' && isSubjectSigned(context.getHandler()))
      await this.proveSubjectKey(req, req.principal);
    if (permits(rules, req.principal) || rules.includes('possession')) return true;
    if (req.principal.kind === 'anonymous') throw unauthorized('this call needs a credential');
    throw forbidden();
  }

  /** A capability bound to its subject key spends only on a request signed with that key. */
  private async proveSubjectKey(req: GuardedRequest, principal: CapabilityPrincipal): Promise<void> {
    if (!principal.bound_to_subject_key) return;
    if (!this.signatures)
      throw signatureRefused({ code: 'signature_invalid', message: 'this service cannot check signatures' });
    const refusal = await this.signatures.verify(req, principal.subject_public_key);
    if (refusal) throw signatureRefused(refusal);
  }

  private async principalOf(req: GuardedRequest, rules: readonly AccessRule[]): Promise<Principal> {
    const presented = presentedCredential(req, rules.includes('capability'));
    if (presented === undefined) return ANONYMOUS;
    if ('malformed' in presented) throw unauthorized(presented.malformed);
    const result = await this.authenticator.authenticate(presented.credential);
    if (!isRefusal(result)) return result;
    if (result.refused === 'unavailable')
      throw new ProblemException(
        503,
        'credentials_unavailable',
        'Credentials cannot be checked now',
        [],
        result.message,
      );
    // Named apart (ADR 0049): a revoked token is refused here, before it reaches the ledger.
    if (result.refused === 'revoked') throw tokenRevoked(result.message);
    throw unauthorized(result.message);
  }
}

function permits(rules: readonly AccessRule[], principal: Principal): boolean {
  return rules.some((rule) => {
    switch (rule) {
      case 'admin':
      case 'issuer':
      case 'reader':
        return hasRole(principal, rule);
      case 'capability':
        return principal.kind === 'capability';
      case 'public':
      case 'possession':
        return false;
    }
  });
}

/** The principal the guard established for this request. */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  return context.switchToHttp().getRequest<GuardedRequest>().principal ?? ANONYMOUS;
});
