// Proves ADR 0053 for operations data on both running services: an anonymous /readyz shows only the status while an operator key of any role reads the durability report, /metrics is no longer on the API port, and the metrics port answers Prometheus text and the full readiness report, and nothing else.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServiceProcess } from '@tally/testing';
import { OrchestratorHarness } from '../orchestrator/orchestrator.harness.js';
import { adminHeaders } from '../support/auth.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const h = new OrchestratorHarness({ prefix: 'opsports' });
let services: { name: string; svc: ServiceProcess }[];
let readerKey: string;

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
  services = [
    { name: 'budget-authority', svc: h.authority! },
    { name: 'agent-orchestrator', svc: h.processes[0]! },
  ];
  readerKey = (await h.authorityCall('POST', '/v1/tenants/default/keys', { role: 'reader' }))['key'] as string;
}, 240_000);
afterAll(() => h.dispose(), 60_000);

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, text: await res.text() };
}

describe('ADR 0053 operations data is not public', () => {
  it('ADR 0053 an anonymous /readyz on the API port has only the status (and the HTTP code); an operator key of role reader or above gets the durability report', async () => {
    for (const { name, svc } of services) {
      const anonymous = await get(`${svc.url}/readyz`);
      expect({ name, status: anonymous.status, body: JSON.parse(anonymous.text) }).toEqual({
        name,
        status: 200,
        body: { status: 'ready' },
      });
      // The orchestrator learns the new key from the directory stream: wait until it accepts it.
      const report = await h.eventually(`${name} to accept the reader key`, async () => {
        const res = await get(`${svc.url}/readyz`, { authorization: `Bearer ${readerKey}` });
        return res.status === 200 ? (JSON.parse(res.text) as Json) : undefined;
      });
      expect(report['status']).toBe('ready');
      expect(report['checks']['nats']['details']['durability']['streams'].length).toBeGreaterThan(0);
      const admin = JSON.parse((await get(`${svc.url}/readyz`, adminHeaders())).text) as Json;
      expect(Object.keys(admin).sort()).toEqual(['checks', 'degraded', 'status']);
      // A credential that does not verify is refused, as on every other route.
      expect(
        (await get(`${svc.url}/readyz`, { authorization: 'Bearer not-a-credential-at-all-0123456789' })).status,
      ).toBe(401);
    }
  });

  it('ADR 0053 /metrics on the API port is no longer public: 404 without a credential and with the admin key, no series in the answer', async () => {
    for (const { name, svc } of services)
      for (const headers of [{}, adminHeaders()]) {
        const res = await get(`${svc.url}/metrics`, headers);
        expect({ name, status: res.status, series: /tally_|process_cpu/.test(res.text) }).toEqual({
          name,
          status: 404,
          series: false,
        });
      }
  });

  it('ADR 0053 the metrics port answers Prometheus text with the operator series and the full readiness report, and no API route', async () => {
    for (const { name, svc } of services) {
      const res = await fetch(`${svc.metricsUrl}/metrics`);
      expect({ name, status: res.status, type: res.headers.get('content-type') }).toEqual({
        name,
        status: 200,
        type: expect.stringMatching(/^text\/plain; version=0\.0\.4/),
      });
      const text = await res.text();
      expect(text).toMatch(/^# TYPE process_cpu_user_seconds_total counter$/m);
      expect(text).toMatch(/^# TYPE tally_stream_messages gauge$/m);
      const ready = await get(`${svc.metricsUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect((JSON.parse(ready.text) as Json)['checks']['nats']['details']['durability']).toBeDefined();
      expect((await get(`${svc.metricsUrl}/openapi.json`)).status).toBe(404);
      expect((await get(`${svc.metricsUrl}/v1/keys`)).status).toBe(404);
      expect((await fetch(`${svc.metricsUrl}/metrics`, { method: 'POST' })).status).toBe(405);
    }
    const authority = await get(`${h.authority!.metricsUrl}/metrics`);
    expect(authority.text).toMatch(/^# TYPE tally_exposure_units gauge$/m);
  });
});
