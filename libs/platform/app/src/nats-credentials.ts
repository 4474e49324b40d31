// How a service logs in to NATS, from typed config: user and password, a token, an NKey
// seed file or a creds file (JWT), and TLS with a CA and a client certificate. nats.js v3
// ignores credentials written in a server URL, so they are taken out of the URL here and
// passed as connection options. Nothing here ever puts a secret into a message: problems
// name the setting, never its value, and servers are only ever shown without userinfo.
import { readFileSync } from 'node:fs';
import { credsAuthenticator, nkeyAuthenticator, type Authenticator } from '@nats-io/nats-core';
import type { NatsLogin } from '@tally/platform-jetstream';
import type { NatsConfig } from './config.schema.js';

/** What the URL setting says, credentials split off. */
interface ParsedServers {
  readonly servers: string[];
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
}

/** Splits `nats://user:pass@host:4222,nats://host2:4222`; a server URL's userinfo is percent-decoded. */
export function parseNatsServers(url: string): ParsedServers | { readonly problem: string } {
  const servers: string[] = [];
  const found = new Set<string>();
  let credentials: { user?: string; password?: string; token?: string } = {};
  for (const raw of url.split(',').map((u) => u.trim())) {
    const match = /^(nats|tls):\/\/(?:([^@/]*)@)?([^\s@/]+)$/.exec(raw);
    if (!match)
      return { problem: 'each server must look like nats://host:port (credentials as nats://user:pass@host)' };
    servers.push(`${match[1]}://${match[3]}`);
    if (match[2] === undefined) continue;
    const [user, password] = match[2].split(':', 2).map((part) => safeDecode(part));
    const next = password === undefined ? { token: user } : { user, password };
    found.add(JSON.stringify(next));
    credentials = next;
  }
  if (found.size > 1)
    return { problem: 'the servers carry different credentials; give them once, in nats.user/password' };
  return { servers, ...credentials };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** One line per problem, naming the setting only. */
export function natsLoginProblems(nats: NatsConfig): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  const parsed = parseNatsServers(nats.url);
  if ('problem' in parsed) return [{ field: 'nats.url', message: parsed.problem }];
  if ((parsed.user !== undefined || parsed.token !== undefined) && (nats.user || nats.password || nats.token))
    problems.push({ field: 'nats.url', message: 'carries credentials and so do nats.user/password/token: give one' });
  const user = nats.user ?? parsed.user;
  const password = nats.password ?? parsed.password;
  const token = nats.token ?? parsed.token;
  if ((user === undefined) !== (password === undefined))
    problems.push({
      field: user === undefined ? 'nats.user' : 'nats.password',
      message: 'user and password go together',
    });
  const modes = [user !== undefined, token !== undefined, !!nats.nkey_seed_file, !!nats.creds_file].filter(Boolean);
  if (modes.length > 1)
    problems.push({
      field: 'nats',
      message: 'choose one way to log in: user and password, token, nkey_seed_file or creds_file',
    });
  const tls = nats.tls;
  if (tls && (tls.cert_file === undefined) !== (tls.key_file === undefined))
    problems.push({ field: 'nats.tls', message: 'cert_file and key_file go together' });
  return problems;
}

/** The servers and login for connectNats; reads the seed, creds and TLS files named in config. */
export function natsLoginOf(nats: NatsConfig): { servers: string[]; login: NatsLogin } {
  const parsed = parseNatsServers(nats.url);
  if ('problem' in parsed) throw new Error(`nats.url: ${parsed.problem}`);
  const user = nats.user ?? parsed.user;
  const password = nats.password ?? parsed.password;
  const token = nats.token ?? parsed.token;
  let authenticator: Authenticator | undefined;
  if (nats.nkey_seed_file)
    authenticator = nkeyAuthenticator(readSecretFile(nats.nkey_seed_file, 'nats.nkey_seed_file'));
  if (nats.creds_file) authenticator = credsAuthenticator(readSecretFile(nats.creds_file, 'nats.creds_file'));
  const tls = nats.tls;
  const login: NatsLogin = {
    ...(user !== undefined && password !== undefined ? { user, pass: password } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(authenticator ? { authenticator } : {}),
    ...(tls
      ? {
          tls: {
            ...(tls.ca_file ? { caFile: tls.ca_file } : {}),
            ...(tls.cert_file ? { certFile: tls.cert_file } : {}),
            ...(tls.key_file ? { keyFile: tls.key_file } : {}),
          },
        }
      : {}),
  };
  return { servers: parsed.servers, login };
}

/** How the service logs in, for logs and /readyz: the mode, never the secret. */
export function natsLoginMode(nats: NatsConfig): string {
  const parsed = parseNatsServers(nats.url);
  const fromUrl = 'problem' in parsed ? {} : parsed;
  const mode = nats.creds_file
    ? 'creds'
    : nats.nkey_seed_file
      ? 'nkey'
      : (nats.token ?? (fromUrl as ParsedServers).token) !== undefined
        ? 'token'
        : (nats.user ?? (fromUrl as ParsedServers).user) !== undefined
          ? 'user'
          : 'none';
  return nats.tls ? `${mode}+tls` : mode;
}

function readSecretFile(path: string, setting: string): Uint8Array {
  try {
    // A seed file may end in a newline; the authenticators want the bare seed (creds files parse their own).
    const text = readFileSync(path, 'utf8');
    return new TextEncoder().encode(setting === 'nats.nkey_seed_file' ? text.trim() : text);
  } catch (error) {
    throw new Error(`${setting}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
