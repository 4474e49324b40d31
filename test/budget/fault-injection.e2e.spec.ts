// Issue 8, fault injection: the test-only endpoint is for an admin alone, a replica without
// the setting has no such route, the boot warns loudly when it is on, and a configuration
// with OIDC (people signing in: production) refuses to boot with it, naming the setting.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ServiceProcess } from '@tally/testing';
import { adminHeaders } from '../support/auth.js';
import { AuthorityStack, monetaryGrant } from './support/authority-stack.js';

let stack: AuthorityStack;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tally-faults-'));
  stack = await AuthorityStack.create('bfaults');
  await stack.start();
}, 180_000);
afterAll(async () => {
  await stack?.dispose();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const faults = (url: string, headers: Record<string, string>) =>
  fetch(`${url}/v1/test/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ reset: true }),
  });

describe('Issue 8: the fault injection endpoint', () => {
  it('Issue 8: only an admin may call it: none and garbage 401; a reader, an issuer and a capability token 403; the admin 200', async () => {
    const url = stack.url;
    const reader = (await stack.ok('POST', '/v1/tenants/default/keys', { role: 'reader' }))['key'] as string;
    const issuer = (await stack.ok('POST', '/v1/tenants/default/keys', { role: 'issuer' }))['key'] as string;
    const cap = await stack.issue([monetaryGrant()]);
    expect((await faults(url, {})).status).toBe(401);
    expect((await faults(url, { authorization: 'Bearer not-a-credential-at-all' })).status).toBe(401);
    expect((await faults(url, { authorization: `Bearer ${reader}` })).status).toBe(403);
    expect((await faults(url, { authorization: `Bearer ${issuer}` })).status).toBe(403);
    expect((await faults(url, { authorization: `Bearer ${cap['token']}` })).status).toBe(403);
    expect((await faults(url, adminHeaders())).status).toBe(200);
  });

  it('Issue 8: the boot warns loudly when it is on; a replica without it warns nothing and has no such route', async () => {
    expect(stack.processes[0]!.logs()).toMatch(/"level":"warn".*FAULT INJECTION IS ON/);
    const plain = await stack.start({ TALLY_FAULT_INJECTION: 'false' });
    expect(plain.logs()).not.toContain('FAULT INJECTION');
    expect((await faults(plain.url, adminHeaders())).status).toBe(404);
  });

  it('Issue 8: with OIDC configured the boot refuses fault injection, naming the setting', async () => {
    const jwks = join(dir, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [] }));
    const config = join(dir, 'oidc.json');
    writeFileSync(
      config,
      JSON.stringify({ auth: { oidc: [{ issuer: 'https://idp.example', audience: 'tally-api', jwks_file: jwks }] } }),
    );
    const refused = await ServiceProcess.start({
      service: 'budget-authority',
      env: { ...stack.env, TALLY_CONFIG: config, TALLY_FAULT_INJECTION: 'true' },
      waitReady: false,
    });
    expect(await refused.waitExit(60_000)).toBe(78);
    expect(refused.logs()).toMatch(/authority\.fault_injection: .*refused when OIDC is configured/);
  });
});
