// Proves the orchestrator's public contract over real HTTP and JetStream: problem+json
// errors naming fields, 404s, idempotent submission by work_id, the `work.submit` command
// with the same semantics, refusal of unpriced models (O7), and the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { tallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { JetStreamCommandClient } from '@tally/platform-nest';
import { sharedNatsUrl } from '@tally/testing';
import { WORK_PROJECTION_ENTITIES, WORK_PROJECTION_MIGRATIONS, WorkUnitRow } from '@tally/orchestrator-projections';
import { openDataSource } from '@tally/platform-typeorm';
import type { NatsConnection } from '@nats-io/nats-core';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'oapi' });
let nc: NatsConnection;
let client: JetStreamCommandClient;
beforeAll(async () => {
  await h.start(1);
  nc = await connectNats({
    url: sharedNatsUrl(),
    name: 'oapi-test',
    connectTimeoutMs: 5_000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  client = await new JetStreamCommandClient(nc, {
    names: tallyNames(h.namespace),
    publishTimeoutMs: 5_000,
    cacheTimeoutMs: 2_000,
    cachePollMs: 50,
  }).start();
}, 180_000);
afterAll(async () => {
  await client?.close();
  await nc?.drain();
  await h.dispose();
}, 60_000);

describe('agent-orchestrator HTTP and command contract', () => {
  it('an invalid submission is a 400 problem+json naming every bad field', async () => {
    const res = await fetch(`${h.url}/v1/work`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await h.token()}` },
      body: JSON.stringify({ purpose: 'dance', route: [], messages: [{ role: 'user' }] }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const problem = (await res.json()) as { type: string; status: number; errors: { field: string }[] };
    expect(problem).toMatchObject({ type: 'validation', status: 400 });
    const fields = problem.errors.map((e) => e.field);
    for (const field of ['purpose', 'route', 'messages.0.content']) expect(fields).toContain(field);
  });

  it('unknown work and sessions are 404 problem+json on every read', async () => {
    for (const path of [
      '/v1/work/nope',
      '/v1/work/nope/receipt',
      '/v1/sessions/nope/messages',
      '/v1/sessions/nope/log',
    ]) {
      const res = await h.get(path);
      expect([path, res.status, res.contentType]).toEqual([
        path,
        404,
        expect.stringContaining('application/problem+json'),
      ]);
      expect(res.body['type']).toBe('not_found');
    }
    expect((await h.post('/v1/work/nope/abort', {})).status).toBe(404);
  });

  it('submitting the same work_id twice is idempotent: one unit, one paid call; different content under it is a 409', async () => {
    const body = workBody();
    const first = await h.post('/v1/work', body);
    const second = await h.post('/v1/work', body);
    expect(first).toEqual(second);
    expect(first.status).toBe(202);
    await h.terminal(body['work_id'] as string);
    expect(((await h.get(`/v1/work/${body['work_id']}/receipt`)).body['attempts'] as unknown[]).length).toBe(1);
    const conflict = await h.post('/v1/work', { ...body, messages: [{ role: 'user', content: 'something else' }] });
    expect(conflict.status).toBe(409);
    expect(conflict.body['type']).toBe('conflict');
    const abortEnded = await h.post(`/v1/work/${body['work_id']}/abort`, {});
    expect(abortEnded.status).toBe(409);
  });

  it('read-your-writes: when POST /v1/work answers 202 the projection already holds the unit, so GET reads it from the projection', async () => {
    const db = await h.projectionDatabase();
    const ds = await openDataSource({
      ...db.open,
      entities: WORK_PROJECTION_ENTITIES,
      migrations: WORK_PROJECTION_MIGRATIONS,
      sqliteBusyTimeoutMs: 10_000,
      postgresPoolSize: 1,
      postgresConnectTimeoutMs: 5_000,
      postgresStatementTimeoutMs: 30_000,
    });
    try {
      for (let i = 0; i < 3; i++) {
        const body = workBody();
        expect((await h.post('/v1/work', body)).status).toBe(202);
        const row = await ds.manager.findOneBy(WorkUnitRow, { workId: body['work_id'] as string });
        expect(row?.workId).toBe(body['work_id']);
        expect((await h.get(`/v1/work/${body['work_id']}`)).status).toBe(200);
      }
    } finally {
      await ds.destroy();
    }
  });

  it('a work_id is generated when absent and the session defaults to it', async () => {
    const { work_id: _omit, session_id: _s, ...body } = workBody();
    const res = await h.post('/v1/work', body);
    expect(res.status).toBe(202);
    const id = res.body['work_id'] as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(await h.terminal(id)).toMatchObject({ status: 'completed', session_id: id });
  });

  it('O7 a model without a price is refused: the work fails naming it and no call is made', async () => {
    const body = workBody({ route: [{ provider: 'scripted', model: 'priceless-model' }] });
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(body['work_id'] as string);
    expect(status['status']).toBe('failed');
    expect(status['error']).toContain('has no price');
    expect(h.calls('priceless-model')).toBe(0);
  });

  it('the work.submit command has the same semantics: queued and completed; a repeat returns the same answer', async () => {
    const { work_id: _omit, ...body } = workBody({ token: await h.token() });
    const reply = await client.send<{ work_id: string; status: string }>(
      'work',
      'submit',
      `submit-${Date.now()}`,
      body,
      { timeoutMs: 10_000, attemptsMax: 3 },
    );
    expect(reply.ok).toBe(true);
    if (!reply.ok) return;
    expect(reply.value.status).toBe('queued');
    expect(await h.terminal(reply.value.work_id)).toMatchObject({ status: 'completed' });
    const withId = workBody({ token: await h.token() });
    const a = await client.send('work', 'submit', `submit-a-${Date.now()}`, withId, {
      timeoutMs: 10_000,
      attemptsMax: 3,
    });
    const b = await client.send('work', 'submit', `submit-b-${Date.now()}`, withId, {
      timeoutMs: 10_000,
      attemptsMax: 3,
    });
    expect(a).toEqual({ ok: true, value: { work_id: withId['work_id'], status: 'queued' } });
    expect(b).toEqual(a);
  });

  it('an invalid work.submit command is answered with a validation error naming the field, not retried', async () => {
    const reply = await client.send(
      'work',
      'submit',
      `bad-${Date.now()}`,
      { ...workBody({ token: await h.token() }), purpose: 'dance' },
      { timeoutMs: 10_000, attemptsMax: 1 },
    );
    expect(reply.ok).toBe(false);
    if (reply.ok) return;
    expect(reply.error.type).toBe('validation');
    expect(JSON.stringify(reply.error)).toContain('purpose');
  });

  it('serves an OpenAPI 3.1 document describing every orchestrator endpoint', async () => {
    const doc = (await h.get('/openapi.json')).body as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths['/v1/work']!)).toContain('post');
    for (const path of [
      '/v1/work/{id}',
      '/v1/work/{id}/receipt',
      '/v1/sessions/{id}/messages',
      '/v1/sessions/{id}/log',
    ])
      expect(Object.keys(doc.paths[path]!)).toContain('get');
    expect(Object.keys(doc.paths['/v1/work/{id}/abort']!)).toContain('post');
  });
});
