// Proves that capability tokens stay out of the ledger (ADR 0007): WorkSubmitted records only
// the token's sha256 fingerprint, a worker admits only with the token its delivery carries and
// that matches the fingerprint (else it fails closed without asking or dispatching), a
// version-1 event that did record a token reads back as its fingerprint, and an unmetered
// port, which asks nobody, runs without the token.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  tokenFingerprint,
  upcastSubmittedV1,
  workEventRegistry,
  type AdmitDecision,
  type BudgetPort,
} from '@tally/orchestrator-application';
import { resolveLimits } from '@tally/orchestrator-domain';
import { createHash } from 'node:crypto';
import { TOKEN, workFixture, type WorkFixture } from './work.fixture.js';

describe('capability tokens stay out of the ledger', () => {
  let f: WorkFixture;
  beforeEach(async () => {
    f = await workFixture('cred');
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('WorkSubmitted records the sha256/base64url fingerprint of the token and the stream bytes never contain the token', async () => {
    await f.submit('c1');
    const expected = createHash('sha256').update(TOKEN).digest('base64url');
    expect(tokenFingerprint(TOKEN)).toBe(expected);
    expect((await f.repository.load('c1')).state.work?.token_fingerprint).toBe(expected);
    const raw = await f.jsm.streams.getMessage(f.names.workEventsStream, {
      last_by_subj: f.names.workEventSubject('c1'),
    });
    const text = new TextDecoder().decode(raw!.data);
    expect(text).toContain(expected);
    expect(text).not.toContain(TOKEN);
  });

  it('a delivery without the token fails closed as credential_unavailable: nothing is admitted or dispatched', async () => {
    await f.submit('c2');
    const result = await f.worker().process('c2', { credential: undefined });
    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(result.kind === 'ended' && result.error).toContain('capability token did not reach the worker');
    expect((await f.repository.load('c2')).state.failure?.code).toBe('credential_unavailable');
    expect(f.budget.admits).toHaveLength(0);
    expect(f.provider.calls()).toBe(0);
  });

  it('a delivery whose token does not match the recorded fingerprint is refused the same way, never admitted with it', async () => {
    await f.submit('c3');
    const result = await f.worker().process('c3', { credential: 'somebody-elses-token' });
    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(f.budget.admits).toHaveLength(0);
    expect(f.provider.calls()).toBe(0);
  });

  it('the matching token delivered with the message is the one presented to the budget authority', async () => {
    await f.submit('c4');
    expect(await f.worker().process('c4')).toMatchObject({ kind: 'ended', status: 'completed' });
    expect(f.budget.admits.map((a) => a.token)).toEqual([TOKEN]);
  });

  it('an unmetered port (credentialRequired false) runs a unit whose token did not arrive', async () => {
    const unmetered: BudgetPort = {
      credentialRequired: false,
      admit: async (request): Promise<AdmitDecision> => ({
        verdict: 'allow',
        hold_id: `unmetered:${request.request_id}`,
      }),
      settle: async () => ({}),
    };
    await f.submit('c5');
    expect(await f.worker({ budget: unmetered }).process('c5', { credential: undefined })).toMatchObject({
      kind: 'ended',
      status: 'completed',
    });
    expect(f.provider.calls()).toBe(1);
  });

  it('a version-1 WorkSubmitted that recorded the token is read as its fingerprint only', () => {
    const v1 = {
      work_id: 'old',
      session_id: 's',
      purpose: 'execute',
      token: TOKEN,
      route: [{ provider: 'p', model: 'm' }],
      messages: [{ role: 'user', content: 'hi' }],
      at: '2026-01-01T00:00:00.000Z',
    };
    const upcast = upcastSubmittedV1(v1);
    expect(upcast).not.toHaveProperty('token');
    expect(upcast['token_fingerprint']).toBe(tokenFingerprint(TOKEN));
    expect(workEventRegistry().versionOf('WorkSubmitted')).toBe(3);
  });

  it('a version-1 or version-2 WorkSubmitted envelope decodes as a version-3 unit of the work API, fingerprint and tenant kept', () => {
    const payload = {
      work_id: 'old2',
      session_id: 's',
      purpose: 'execute',
      token_fingerprint: tokenFingerprint(TOKEN),
      tenant_id: 'acme',
      route: [{ provider: 'p', model: 'm' }],
      messages: [{ role: 'user', content: 'hi' }],
      limits: resolveLimits(undefined),
      at: '2026-01-01T00:00:00.000Z',
    };
    const envelope = (version: number, body: object) =>
      JSON.stringify({
        event_id: `e${version}`,
        type: 'WorkSubmitted',
        schema_version: version,
        aggregate_id: 'old2',
        occurred_at: '2026-01-01T00:00:00.000Z',
        payload: body,
      });
    const { token_fingerprint: _f, ...v1 } = payload;
    for (const [version, body] of [
      [2, payload],
      [1, { ...v1, token: TOKEN }],
    ] as const) {
      const decoded = workEventRegistry().decode(envelope(version, body));
      if (!decoded.ok) throw new Error(JSON.stringify(decoded));
      expect(decoded.value.schemaVersion).toBe(3);
      expect(decoded.value.payload).toEqual({ ...payload, entrypoint: 'work' });
    }
  });
});
