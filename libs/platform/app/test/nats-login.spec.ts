// Proves issue 9 item 3 against real nats-servers: every login mode in config works (user and password, the same in a
// URL, token, NKey seed file, creds file, TLS with a client certificate), and a refused login names no secret.
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeyUser, operatorMode, PrivateNatsServer, tlsFiles } from '@tally/testing';
import { ConfigError, loadConfig } from '../src/config.loader.js';
import { connectTallyNats } from '../src/nats-runtime.js';
import { natsLoginMode } from '../src/nats-credentials.js';

const dir = mkdtempSync(join(tmpdir(), 'tally-login-'));
const servers: PrivateNatsServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(config: string): Promise<PrivateNatsServer> {
  const server = await PrivateNatsServer.start({ config });
  servers.push(server);
  return server;
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Connects as a service would, runs a JetStream call (account info), and closes. */
async function logsIn(env: Record<string, string>): Promise<string> {
  const config = loadConfig(env);
  const nats = await connectTallyNats(config, 'login-test');
  try {
    await nats.jsm.getAccountInfo();
    return natsLoginMode(config.nats);
  } finally {
    await nats.nc.close();
  }
}

async function refusal(env: Record<string, string>): Promise<string> {
  try {
    await logsIn({ ...env, TALLY__NATS__CONNECT_TIMEOUT_MS: '2000' });
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected the login to be refused');
}

const PASSWORD = 'pa55-w0rd:with@odd/chars';

describe('NATS logins', () => {
  it('issue 9 item 3: user and password from settings, and the same credentials inside a nats:// URL, both log in', async () => {
    const server = await serve(`authorization { users: [ { user: svc, password: "${PASSWORD}" } ] }\n`);
    expect(await logsIn({ NATS_URL: server.url, NATS_USER: 'svc', NATS_PASSWORD: PASSWORD })).toBe('user');
    const inUrl = `nats://svc:${encodeURIComponent(PASSWORD)}@127.0.0.1:${server.port}`;
    expect(await logsIn({ NATS_URL: inUrl })).toBe('user');
    const wrong = await refusal({
      NATS_URL: `nats://svc:not-${encodeURIComponent(PASSWORD)}@127.0.0.1:${server.port}`,
    });
    expect(wrong).toMatch(/NATS at nats:\/\/127\.0\.0\.1:\d+ is not available.*(Authorization|authentication)/is);
    expect(wrong).not.toContain('not-');
    expect(wrong).not.toContain(encodeURIComponent(PASSWORD));
  });

  it('issue 9 item 3: a token from settings or in the URL logs in', async () => {
    const server = await serve('authorization { token: "t0ken-s3cret" }\n');
    expect(await logsIn({ NATS_URL: server.url, NATS_TOKEN: 't0ken-s3cret' })).toBe('token');
    expect(await logsIn({ NATS_URL: `nats://t0ken-s3cret@127.0.0.1:${server.port}` })).toBe('token');
    expect(await refusal({ NATS_URL: server.url, NATS_TOKEN: 'wrong-t0ken' })).not.toContain('wrong-t0ken');
  });

  it('issue 9 item 3: an NKey seed file logs in as the user whose public key the server knows', async () => {
    const user = nkeyUser();
    const server = await serve(`authorization { users: [ { nkey: ${user.publicKey} } ] }\n`);
    const seedFile = file('service.nk', `${user.seed}\n`);
    expect(await logsIn({ NATS_URL: server.url, NATS_NKEY: seedFile })).toBe('nkey');
    const stranger = file('stranger.nk', nkeyUser().seed);
    expect(await refusal({ NATS_URL: server.url, NATS_NKEY: stranger })).not.toContain(nkeyUser().seed.slice(0, 8));
  });

  it('issue 9 item 3: a creds file (user JWT and seed) logs in to an operator-mode server', async () => {
    const mode = operatorMode();
    const server = await serve(mode.config);
    expect(await logsIn({ NATS_URL: server.url, NATS_CREDS: file('service.creds', mode.creds) })).toBe('creds');
  });

  it('issue 9 item 3: TLS with the CA and a client certificate logs in where the server verifies clients', async () => {
    const tls = tlsFiles(join(dir, 'tls'));
    const server = await serve(
      `tls { cert_file: "${tls.serverCertFile}", key_file: "${tls.serverKeyFile}", ca_file: "${tls.caFile}", verify: true }\n`,
    );
    const env = { NATS_URL: server.url, NATS_CA: tls.caFile };
    expect(await logsIn({ ...env, NATS_CERT: tls.clientCertFile, NATS_KEY: tls.clientKeyFile })).toBe('none+tls');
    // Without the client certificate the server refuses the handshake.
    await expect(logsIn({ ...env, TALLY__NATS__CONNECT_TIMEOUT_MS: '2000' })).rejects.toThrow(/not available/);
  });

  it('issue 9 item 3: conflicting or half-given credentials are refused at boot, naming the setting and never the value', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        if (error instanceof ConfigError) return error.message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(problems({ NATS_USER: 'svc' })).toMatch(/nats\.password: user and password go together/);
    const both = problems({ NATS_URL: 'nats://svc:hunter2@127.0.0.1:4222', NATS_TOKEN: 'tok-hunter3' });
    expect(both).toMatch(/nats\.url: carries credentials and so do nats\.user\/password\/token/);
    expect(both).not.toMatch(/hunter/);
    expect(problems({ NATS_TOKEN: 'tok', NATS_NKEY: '/x.nk' })).toMatch(/choose one way to log in/);
    expect(problems({ NATS_CERT: '/c.pem' })).toMatch(/nats\.tls: cert_file and key_file go together/);
  });
});
