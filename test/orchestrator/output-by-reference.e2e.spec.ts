// Proves issue 9 (item 7, ADR 0019): a provider reply larger than a stream message is kept by
// reference, so the paid call is recorded once. Before, its completion commit was refused,
// the attempt was settled unknown on redelivery and the provider called (and paid) again.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { workProjectionDigest } from './projection-digest.js';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const MIB = 1024 * 1024;
const h = new OrchestratorHarness({ prefix: 'outref', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

type Json = Record<string, unknown>;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

const authority = (method: string, path: string, body?: unknown): Promise<Json> => h.authorityCall(method, path, body);

async function capability(): Promise<Json> {
  const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  return authority('POST', '/v1/capabilities', {
    subject_public_key: subject,
    ttl_seconds: 3600,
    grants: [
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 5,
        max_cost_per_invocation: 1_000_000_000,
        currency: 'USD',
      },
    ],
  });
}

/** Scripts the next call to answer 4 MiB; non-ASCII, so a chunk or prefix cut mid-character shows in the digest. */
function scriptBigReply(): string {
  const reply = 'é long reply ✓ '.repeat(Math.ceil((4 * MIB) / 15)).slice(0, 4 * MIB);
  // In SSE events of 4 KiB, as a provider streams it (one event is bounded by the parser).
  const chunks = Array.from({ length: Math.ceil(reply.length / 4096) }, (_, i) =>
    reply.slice(i * 4096, (i + 1) * 4096),
  );
  h.provider().script('ok-model', [{ kind: 'stream', chunks, usage: { input_tokens: 5, output_tokens: 3 } }]);
  return reply;
}

describe('Issue 9: provider output larger than a message is kept by reference', () => {
  it('Issue 9: a 4 MiB reply completes with exactly one provider call, is charged once, reads back whole, and replays to the same projection', async () => {
    const cap = await capability();
    const reply = scriptBigReply();
    const body = workBody({ token: cap['token'] });
    const workId = body['work_id'] as string;
    expect((await h.post('/v1/work', body)).status).toBe(202);
    const status = await h.terminal(workId, 120_000);
    expect(status['status']).toBe('completed');
    expect(h.calls('ok-model')).toBe(1);

    const read = (await h.get(`/v1/work/${workId}`)).body;
    expect(String(read['output']).length).toBe(reply.length);
    expect(sha256(String(read['output']))).toBe(sha256(reply));

    const session = (await h.get(`/v1/sessions/${String(body['session_id'])}/messages`)).body;
    const said = (session['messages'] as { role: string; content: string }[]).find((m) => m.role === 'assistant');
    expect(sha256(said!.content)).toBe(sha256(reply));

    const receipt = (await h.get(`/v1/work/${workId}/receipt`)).body;
    const attempts = receipt['attempts'] as Json[];
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!['usage']).toEqual({ input_tokens: 5, output_tokens: 3, cost_units: 11 });
    const usage = await h.eventually('the authority to record the realized cost', async () => {
      const u = ((await authority('GET', `/v1/capabilities/${cap['id']}/usage`))['grants'] as Json[])[0]!;
      return u['realized_cost_units'] === 11 ? u : undefined;
    });
    expect(usage['invocation_count']).toBe(1);
    // Still one call after a redelivery would have had time to happen.
    expect(h.calls('ok-model')).toBe(1);

    await h.processes[0]!.stop();
    const live = await workProjectionDigest(await h.projectionDatabase(), h.namespace);
    const replayed = await h.newDatabase('replayed');
    await h.startOne(0, replayed.env);
    await h.eventually('the replay to reach the live checkpoint', async () =>
      (await workProjectionDigest(replayed, h.namespace)).checkpoint >= live.checkpoint ? true : undefined,
    );
    expect((await workProjectionDigest(replayed, h.namespace)).digest).toBe(live.digest);
    expect(sha256(String((await h.get(`/v1/work/${workId}`)).body['output']))).toBe(sha256(reply));
  }, 240_000);

  it('Issue 9: a drop-in chat completion of 4 MiB answers the whole reply with one provider call', async () => {
    const cap = await capability();
    const before = h.calls('ok-model');
    const reply = scriptBigReply();
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${String(cap['token'])}` },
      body: JSON.stringify({ model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(sha256(body.choices[0]!.message.content)).toBe(sha256(reply));
    expect(h.calls('ok-model') - before).toBe(1);
  }, 120_000);
});
