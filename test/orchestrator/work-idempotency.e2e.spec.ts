// Issue 8, item 4 on the orchestrator (ADR 0023): POST /v1/work takes an Idempotency-Key when
// the body names no work_id. The work id derives from the tenant, the capability and the key,
// and the work ledger compares a resubmission with the unit it holds: the same request is the
// same unit, another request under the key a 409 idempotency_conflict naming it, and the same
// key from another tenant's capability a unit of its own.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { sharedNatsUrl } from '@tally/testing';
import { TokenMint, untilAccepted } from '../support/auth.js';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'oidem' });
let mine: string;
let theirs: string;
beforeAll(async () => {
  await h.start(1);
  const mint = await TokenMint.open(sharedNatsUrl(), h.namespace);
  mine = mint.seal();
  theirs = mint.seal({ tenant_id: 'other-tenant' });
  await untilAccepted(h.url, mine);
}, 180_000);
afterAll(async () => h.dispose(), 60_000);

async function submit(token: string, body: Record<string, unknown>, key: string) {
  const res = await fetch(`${h.url}/v1/work`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A submission that leaves the work id to the key. */
function keyedBody(content: string): Record<string, unknown> {
  const { work_id: _id, session_id: _s, ...rest } = workBody({ messages: [{ role: 'user', content }] });
  return rest;
}

describe('Issue 8: Idempotency-Key on POST /v1/work', () => {
  it('Issue 8: the same key and body is the same unit; another body is a 409 naming the key; another tenant does not collide', async () => {
    const key = `work-${randomBytes(6).toString('hex')}`;
    const body = keyedBody('hello once');
    const first = await submit(mine, body, key);
    const again = await submit(mine, body, key);
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.body['work_id']).toBe(first.body['work_id']);

    const other = await submit(mine, keyedBody('something else'), key);
    expect(other.status).toBe(409);
    expect(other.body['type']).toBe('idempotency_conflict');
    expect(JSON.stringify(other.body)).toContain(key);

    const tenantB = await submit(theirs, body, key);
    expect(tenantB.status).toBe(202);
    expect(tenantB.body['work_id']).not.toBe(first.body['work_id']);
    // Each tenant reads its own unit and not the other's.
    const read = (token: string, id: unknown) =>
      fetch(`${h.url}/v1/work/${String(id)}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    expect(await read(mine, first.body['work_id'])).toBe(200);
    expect(await read(theirs, first.body['work_id'])).toBe(404);
  });

  it('Issue 8: a key that is not 1 to 255 printable characters is a 400 naming Idempotency-Key', async () => {
    const res = await submit(mine, keyedBody('bad key'), 'x'.repeat(256));
    expect(res.status).toBe(400);
    expect(res.body['errors']).toEqual([expect.objectContaining({ field: 'Idempotency-Key' })]);
  });
});
