// Proves O4: the session log puts each receipt between its prompt and reply and closes the
// turn with a turn card, and a restart or a full replay into an empty database yields the
// same receipts, messages and rows (byte for byte), with no warnings.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { workProjectionDigest } from './projection-digest.js';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'o4' });
beforeAll(async () => {
  await h.start(1);
}, 180_000);
afterAll(() => h.dispose(), 60_000);

async function snapshot(sessionId: string, workIds: string[]) {
  const receipts = [];
  for (const id of workIds) receipts.push((await h.get(`/v1/work/${id}/receipt`)).body);
  const messages = (await h.get(`/v1/sessions/${sessionId}/messages`)).body;
  const log = await h.sessionLog(sessionId, workIds.at(-1)!);
  return { receipts, messages, log };
}

describe('agent-orchestrator O4 audit survives restart and replay', () => {
  it('O4 the log reads header, prompt, receipt, reply, turn card per unit; a restart and a replay into an empty database give the same receipts, messages and rows, with no warnings', async () => {
    const sessionId = `s-o4-${Date.now().toString(36)}`;
    h.provider().script('flaky-model', [
      { kind: 'reset' },
      { kind: 'stream', chunks: ['first reply'] },
      { kind: 'stream', chunks: ['second reply'] },
    ]);
    const ids: string[] = [];
    for (const content of ['first prompt', 'second prompt']) {
      const body = workBody({
        session_id: sessionId,
        route: [{ provider: 'scripted', model: 'flaky-model' }],
        messages: [{ role: 'user', content }],
      });
      expect((await h.post('/v1/work', body)).status).toBe(202);
      await h.terminal(body['work_id'] as string);
      ids.push(body['work_id'] as string);
    }
    const before = await snapshot(sessionId, ids);
    expect(before.log.entries.map((e) => e['kind'])).toEqual([
      'header',
      'message',
      'receipt',
      'message',
      'turn-card',
      'message',
      'receipt',
      'message',
      'turn-card',
    ]);
    expect(before.log.warnings).toEqual([]);
    expect(before.messages).toEqual({
      messages: [
        { role: 'user', content: 'first prompt' },
        { role: 'assistant', content: 'first reply' },
        { role: 'user', content: 'second prompt' },
        { role: 'assistant', content: 'second reply' },
      ],
    });
    expect((before.receipts[0]!['attempts'] as unknown[]).length).toBe(2);

    await h.processes[0]!.stop();
    const live = await workProjectionDigest(await h.projectionDatabase(), h.namespace);
    await h.startOne(0);
    expect(await snapshot(sessionId, ids)).toEqual(before);

    await h.processes[0]!.stop();
    const empty = await h.newDatabase('replayed');
    await h.startOne(0, empty.env);
    await h.eventually('the replay to reach the live checkpoint', async () =>
      (await workProjectionDigest(empty, h.namespace)).checkpoint >= live.checkpoint ? true : undefined,
    );
    expect(await snapshot(sessionId, ids)).toEqual(before);
    expect((await workProjectionDigest(empty, h.namespace)).digest).toBe(live.digest);
  }, 180_000);
});
