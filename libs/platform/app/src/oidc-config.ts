// The OIDC issuers of `auth.oidc[]` as the access guard's verifier. The settings are checked
// when the config loads (oidc-settings.ts); the JWKS files are read here, at boot, so an
// unreadable or malformed one stops the service with a message naming the setting.
import { readFileSync } from 'node:fs';
import { JoseOidcVerifier, type OidcIssuer, type OidcVerifier } from '@tally/platform-auth';
import type { JSONWebKeySet } from 'jose';
import { ConfigError } from './config.loader.js';
import type { TallyConfig } from './config.schema.js';

/** A JWKS file bigger than this is not a key set. */
const JWKS_FILE_BYTES_MAX = 1024 * 1024;

/** The verifier of the configured issuers, or undefined when none is configured (JWTs are then refused). */
export function oidcVerifierOf(config: TallyConfig): OidcVerifier | undefined {
  if (config.auth.oidc.length === 0) return undefined;
  const issuers: OidcIssuer[] = config.auth.oidc.map((settings, index) => ({
    settings,
    jwks:
      settings.jwks_url !== undefined
        ? { url: settings.jwks_url }
        : { keys: readJwksFile(settings.jwks_file!, `auth.oidc.${index}.jwks_file`) },
  }));
  return new JoseOidcVerifier(issuers);
}

function readJwksFile(path: string, setting: string): JSONWebKeySet {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([`${setting}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`]);
  }
  if (text.length > JWKS_FILE_BYTES_MAX) throw new ConfigError([`${setting}: ${path} is larger than a key set`]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`${setting}: ${path} is not JSON: ${(error as Error).message}`]);
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === 'object' && k !== null))
    throw new ConfigError([`${setting}: ${path} is not a JWKS (an object with a non-empty "keys" array)`]);
  return parsed as JSONWebKeySet;
}
