// Real credentials for tests of NATS logins: an operator-mode server config with a
// creds file (JWT + NKey seed, signed here the way nsc signs them), NKey users, and a CA
// with server and client certificates made by openssl. Nothing here is a mock: the
// nats-server checks every one of them.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeys } from '@nats-io/nats-core';

type KeyPair = ReturnType<typeof nkeys.createUser>;

const b64url = (data: string | Uint8Array) => Buffer.from(data).toString('base64url');

/** A NATS JWT (nats-io/jwt v2 layout): ed25519-nkey signed by the issuer, jti the claims' hash. */
function signJwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const header = b64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }));
  const body = { iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub: subject, nats };
  const jti = createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 52).toUpperCase();
  const claims = b64url(JSON.stringify({ jti, ...body }));
  const signature = b64url(issuer.sign(new TextEncoder().encode(`${header}.${claims}`)));
  return `${header}.${claims}.${signature}`;
}

export interface OperatorMode {
  /** The server config: the operator, a memory resolver and the account preloaded. */
  readonly config: string;
  /** A creds file's text for a user of that account. */
  readonly creds: string;
}

/** An operator, one JetStream-enabled account, and one user with a creds file. */
export function operatorMode(): OperatorMode {
  const operator = nkeys.createOperator();
  const system = nkeys.createAccount();
  const account = nkeys.createAccount();
  const user = nkeys.createUser();
  const operatorJwt = signJwt(operator, operator.getPublicKey(), 'tally-test', { type: 'operator', version: 2 });
  const limits = {
    subs: -1,
    data: -1,
    payload: -1,
    imports: -1,
    exports: -1,
    wildcards: true,
    conn: -1,
    leaf: -1,
    mem_storage: -1,
    disk_storage: -1,
    streams: -1,
    consumer: -1,
  };
  const accountJwt = signJwt(operator, account.getPublicKey(), 'TALLY', { limits, type: 'account', version: 2 });
  // JetStream needs a system account; it has no JetStream of its own.
  const systemLimits = { ...limits, mem_storage: 0, disk_storage: 0, streams: 0, consumer: 0 };
  const systemJwt = signJwt(operator, system.getPublicKey(), 'SYS', {
    limits: systemLimits,
    type: 'account',
    version: 2,
  });
  const userJwt = signJwt(account, user.getPublicKey(), 'service', {
    pub: {},
    sub: {},
    subs: -1,
    data: -1,
    payload: -1,
    type: 'user',
    version: 2,
  });
  const seed = new TextDecoder().decode(user.getSeed());
  const creds =
    `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n` +
    `-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`;
  const config =
    `operator: ${operatorJwt}\nsystem_account: ${system.getPublicKey()}\nresolver: MEMORY\n` +
    `resolver_preload: {\n  ${account.getPublicKey()}: ${accountJwt}\n  ${system.getPublicKey()}: ${systemJwt}\n}\n`;
  return { config, creds };
}

/** A new NKey user: its public key for the server config, its seed for the seed file. */
export function nkeyUser(): { publicKey: string; seed: string } {
  const user = nkeys.createUser();
  return { publicKey: user.getPublicKey(), seed: new TextDecoder().decode(user.getSeed()) };
}

export interface TlsFiles {
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA (openssl). */
export function tlsFiles(dir: string): TlsFiles {
  mkdirSync(dir, { recursive: true });
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => {
    const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`openssl ${args[0]} failed: ${run.stderr}`);
  };
  const key = (name: string) =>
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file(name));
  key('ca.key');
  openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    file('ca.key'),
    '-subj',
    '/CN=tally-test-ca',
    '-days',
    '2',
    '-out',
    file('ca.pem'),
  );
  const leaf = (name: string, cn: string, ext: string) => {
    key(`${name}.key`);
    openssl('req', '-new', '-key', file(`${name}.key`), '-subj', `/CN=${cn}`, '-out', file(`${name}.csr`));
    writeFileSync(file(`${name}.ext`), ext);
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      file(`${name}.ext`),
      '-out',
      file(`${name}.pem`),
    );
  };
  // nats.js names an IP server 'localhost' in the TLS handshake, so the certificate carries both.
  leaf('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'tally-service', 'extendedKeyUsage=clientAuth\n');
  return {
    caFile: file('ca.pem'),
    serverCertFile: file('server.pem'),
    serverKeyFile: file('server.key'),
    clientCertFile: file('client.pem'),
    clientKeyFile: file('client.key'),
  };
}
