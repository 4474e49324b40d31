// Proves ADR 0045 on a running agent-orchestrator (real NATS, SQLite or PostgreSQL): a
// message that does not decode, written raw to one work unit's subject, quarantines only that
// unit. Its status, its receipt and its session's log and messages answer 503 naming the
// quarantine and never the content; a unit submitted after it completes and reads current.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { tallyNames } from '@tally/contracts';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const MARKER = 'quarantine-marker-9b2d';
const h = new OrchestratorHarness({ prefix: 'oquar' });
beforeAll(async () => {
  await h.start(1);
}, 180_000);
afterAll(() => h.dispose(), 60_000);

describe('ADR 0045: one event that cannot be projected stops only its own work unit', () => {
  it('ADR 0045 a quarantined unit answers 503 on its status, receipt and session reads; a unit submitted after it reads current', async () => {
    const first = workBody();
    expect((await h.post('/v1/work', first)).status).toBe(202);
    await h.terminal(first['work_id'] as string);
    const workId = first['work_id'] as string;

    const nc = await connect({ servers: h.natsUrl.split(',')[0]! });
    let sequence: number;
    try {
      const garbled = { type: 'WorkCompleted', payload: { output: MARKER } };
      const subject = tallyNames(h.namespace).workEventSubject(workId);
      sequence = (await jetstream(nc).publish(subject, JSON.stringify(garbled), { timeout: 10_000 })).seq;
    } finally {
      await nc.close();
    }

    const status = await h.eventually('the unit to be quarantined', async () => {
      const read = await h.get(`/v1/work/${workId}`);
      return read.status === 503 ? read : undefined;
    });
    expect(status.contentType).toContain('application/problem+json');
    expect(status.body).toMatchObject({ type: 'projection_quarantined', status: 503 });
    expect(status.body['detail']).toContain(
      `orchestrator-work-units could not apply event ${sequence} (WorkCompleted)`,
    );
    for (const path of [
      `/v1/work/${workId}/receipt`,
      `/v1/sessions/${first['session_id']}/log`,
      `/v1/sessions/${first['session_id']}/messages`,
    ]) {
      const read = await h.get(path);
      expect({ path, status: read.status, type: read.body['type'] }).toEqual({
        path,
        status: 503,
        type: 'projection_quarantined',
      });
      expect(JSON.stringify(read.body)).not.toContain(MARKER);
    }

    const after = workBody();
    expect((await h.post('/v1/work', after)).status).toBe(202);
    expect(await h.terminal(after['work_id'] as string)).toMatchObject({ status: 'completed' });
    const log = await h.sessionLog(after['session_id'] as string, after['work_id'] as string);
    expect(log.warnings).toEqual([]);
  }, 180_000);
});
