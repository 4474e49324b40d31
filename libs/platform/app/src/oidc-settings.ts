// The rules between the fields of `auth.oidc[]` that the schema's decorators cannot say:
// one JWKS source per issuer, https unless on loopback, each issuer once, roles Tally knows.
import type { FieldError } from '@tally/contracts';
import { ROLES } from '@tally/platform-auth';
import type { OidcIssuerConfig } from './config.schema.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

export function validateOidcIssuers(issuers: readonly OidcIssuerConfig[]): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  issuers.forEach((issuer, index) => {
    const at = `auth.oidc.${index}`;
    const sources = [issuer.jwks_url, issuer.jwks_file].filter((s) => s !== undefined).length;
    if (sources !== 1) errors.push({ field: `${at}.jwks_url`, message: 'set exactly one of jwks_url and jwks_file' });
    if (issuer.jwks_url !== undefined && !secureOrLoopback(issuer.jwks_url))
      errors.push({ field: `${at}.jwks_url`, message: 'must be https (http only on loopback)' });
    if (seen.has(issuer.issuer)) errors.push({ field: `${at}.issuer`, message: 'this issuer is configured twice' });
    seen.add(issuer.issuer);
    for (const [value, role] of Object.entries(issuer.role_map ?? {}))
      if (!ROLES.includes(role))
        errors.push({ field: `${at}.role_map.${value}`, message: `must be one of ${ROLES.join(', ')}` });
  });
  return errors;
}

function secureOrLoopback(url: string): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'https:' || LOOPBACK.has(parsed.hostname);
}
