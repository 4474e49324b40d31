// OIDC bearer JWTs from the platform's identity providers, verified with jose. The token's
// unverified `iss` only picks which configured issuer to check it against; everything that
// decides is verified: the signature (asymmetric algorithms only, by a key of that issuer's
// JWKS), the issuer, the audience, expiry and not-before within a bounded clock skew, and the
// configured tenant and role claims. A token without a valid tenant or role is refused.
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { refusal, type OidcVerifier, type Refusal } from './authenticator.js';
import { ROLES, type OperatorPrincipal, type Role } from './principal.js';

/** One configured issuer; the same fields as `auth.oidc[]` in the config. */
export interface OidcIssuerSettings {
  readonly issuer: string;
  readonly audience: string;
  readonly tenant_claim: string;
  readonly role_claim: string;
  /** Claim value -> role; when set, only mapped values count. Without it the value must be a role name. */
  readonly role_map?: Readonly<Record<string, Role>>;
  readonly clock_skew_seconds: number;
  readonly jwks_cache_ms: number;
  readonly jwks_cooldown_ms: number;
  readonly jwks_timeout_ms: number;
}

/** Where an issuer's keys come from: fetched from its URL (cached, refetched on an unknown kid), or given. */
export type JwksSource = { readonly url: string } | { readonly keys: JSONWebKeySet };

export interface OidcIssuer {
  readonly settings: OidcIssuerSettings;
  readonly jwks: JwksSource;
}

/**
 * Asymmetric signatures only: `none` and the HMAC family are never accepted, since an HMAC
 * key is a shared secret and an HS token "signed" with a public key is a known forgery.
 */
export const OIDC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

const TENANT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const RANK: Record<Role, number> = { reader: 0, issuer: 1, admin: 2 };

interface IssuerEntry {
  readonly settings: OidcIssuerSettings;
  readonly keys: JWTVerifyGetKey;
}

export class JoseOidcVerifier implements OidcVerifier {
  private readonly issuers = new Map<string, IssuerEntry>();

  constructor(issuers: readonly OidcIssuer[]) {
    for (const { settings, jwks } of issuers) {
      if (this.issuers.has(settings.issuer)) throw new Error(`OIDC issuer ${settings.issuer} is configured twice`);
      const keys =
        'url' in jwks
          ? createRemoteJWKSet(new URL(jwks.url), {
              cacheMaxAge: settings.jwks_cache_ms,
              cooldownDuration: settings.jwks_cooldown_ms,
              timeoutDuration: settings.jwks_timeout_ms,
            })
          : createLocalJWKSet(jwks.keys);
      this.issuers.set(settings.issuer, { settings, keys });
    }
  }

  async verify(jwt: string): Promise<OperatorPrincipal | Refusal> {
    const entry = this.issuerOf(jwt);
    if (entry === undefined) return refusal('unknown', "the token's issuer is not configured");
    const { settings } = entry;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, entry.keys, {
        issuer: settings.issuer,
        audience: settings.audience,
        clockTolerance: settings.clock_skew_seconds,
        algorithms: [...OIDC_ALGORITHMS],
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (error) {
      return refusalOf(error);
    }
    return principalOf(payload, settings);
  }

  private issuerOf(jwt: string): IssuerEntry | undefined {
    try {
      const { iss } = decodeJwt(jwt);
      return typeof iss === 'string' ? this.issuers.get(iss) : undefined;
    } catch {
      return undefined;
    }
  }
}

function principalOf(payload: JWTPayload, settings: OidcIssuerSettings): OperatorPrincipal | Refusal {
  if (typeof payload.sub !== 'string' || payload.sub.length === 0)
    return refusal('invalid', 'the token has no subject');
  const tenant = claimOf(payload, settings.tenant_claim);
  if (typeof tenant !== 'string' || !TENANT_ID.test(tenant))
    return refusal('invalid', `the token's ${settings.tenant_claim} claim names no tenant`);
  const role = roleOf(claimOf(payload, settings.role_claim), settings.role_map);
  if (role === undefined) return refusal('invalid', `the token's ${settings.role_claim} claim names no Tally role`);
  return { kind: 'operator', role, tenant_id: tenant, subject: `${settings.issuer}#${payload.sub}`, via: 'oidc' };
}

/**
 * The claim by its exact name (identity providers namespace claims with URLs, dots included),
 * else by a dotted path into nested objects (`realm_access.roles`).
 */
function claimOf(payload: JWTPayload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let node: unknown = payload;
  for (const part of name.split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node) || !Object.hasOwn(node, part))
      return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** The highest role the claim's values name (a claim may hold one value or a list, like groups). */
function roleOf(claim: unknown, roleMap: Readonly<Record<string, Role>> | undefined): Role | undefined {
  const values = Array.isArray(claim) ? claim : [claim];
  let best: Role | undefined;
  for (const value of values.slice(0, 256)) {
    if (typeof value !== 'string') continue;
    const role = roleMap ? (Object.hasOwn(roleMap, value) ? roleMap[value] : undefined) : value;
    if (!ROLES.includes(role as Role)) continue;
    if (best === undefined || RANK[role as Role] > RANK[best]) best = role as Role;
  }
  return best;
}

function refusalOf(error: unknown): Refusal {
  if (error instanceof errors.JWTExpired) return refusal('expired', 'the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed)
    return refusal('invalid', `the token's ${error.claim} claim is not accepted (${error.reason})`);
  if (error instanceof errors.JWKSNoMatchingKey)
    return refusal('unknown', "no published key of the issuer matches the token's kid");
  if (error instanceof errors.JOSEAlgNotAllowed) return refusal('invalid', "the token's algorithm is not accepted");
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return refusal('invalid', "the token's signature does not verify");
  // The issuer's keys could not be fetched (timeout, network, a non-200 answer): the token
  // may be good, but it cannot be checked now.
  if (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    !(error instanceof errors.JOSEError) ||
    isFetchFailure(error)
  )
    return refusal('unavailable', "the issuer's keys cannot be fetched now");
  return refusal('invalid', 'the token does not verify');
}

function isFetchFailure(error: errors.JOSEError): boolean {
  return error.code === 'ERR_JOSE_GENERIC' && /JSON Web Key Set|HTTP response/i.test(error.message);
}

/**
 * Refuses tokens naming a tenant the directory does not know: a token of an identity
 * provider can say any tenant, and Tally acts only in tenants its ledger created.
 */
export function knownTenantsOnly(
  verifier: OidcVerifier,
  tenantKnown: (tenantId: string) => boolean | Promise<boolean>,
): OidcVerifier {
  return {
    verify: async (jwt) => {
      const result = await verifier.verify(jwt);
      if ('refused' in result || (await tenantKnown(result.tenant_id))) return result;
      return refusal('unknown', "the token's tenant is not known");
    },
  };
}
