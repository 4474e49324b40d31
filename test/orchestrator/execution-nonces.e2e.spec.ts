// Proves B13-B16 with O7 end to end: the real orchestrator redeems the execution nonce it is handed.
// With the authority's require_execution_nonce on, it pays only on the redeem, bound to the request and
// the call's parameters; a nonce minted for other parameters or another request, or one already
// redeemed, is refused with no paid call and no spend.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { AuthorityLedger, firstAttemptOf, unitAdmit, type Json } from './authority-ledger.js';
import { OrchestratorHarness, workBody } from './orchestrator.harness.js';

const h = new OrchestratorHarness({ prefix: 'nonces', env: { TALLY__ORCHESTRATOR__BUDGET_MODE: 'metered' } });
let ledger: AuthorityLedger;
beforeAll(async () => {
  await h.startAuthority({ TALLY__AUTHORITY__REQUIRE_EXECUTION_NONCE: 'true' });
  await h.start(1);
  ledger = await AuthorityLedger.open(h.natsUrl, h.namespace);
}, 240_000);
afterAll(async () => {
  await ledger?.close();
  await h.dispose();
}, 60_000);

const authority = (method: string, path: string, body?: unknown): Promise<Json> => h.authorityCall(method, path, body);

async function issue(): Promise<Json> {
  const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
  return authority('POST', '/v1/capabilities', {
    subject_public_key: subject,
    ttl_seconds: 3600,
    grants: [
      {
        server_id: 'scripted',
        tool_name: 'ok-model',
        max_invocations: 5,
        max_cost_per_invocation: 1_000,
        max_total_cost_units: 5_000,
        currency: 'USD',
      },
    ],
  });
}

const usageOf = async (capId: string): Promise<Json> =>
  ((await authority('GET', `/v1/capabilities/${capId}/usage`))['grants'] as Json[])[0]!;

/** Waits until the grant shows `count` invocations and `committed` units committed, and returns its usage. */
const usageIs = (capId: string, count: number, committed: number) =>
  h.eventually(`usage ${count}/${committed}`, async () => {
    const usage = await usageOf(capId);
    return usage['invocation_count'] === count && usage['committed_cost_units'] === committed ? usage : undefined;
  });

/** The authority's signed receipts of one request, oldest first. */
const receiptsOf = async (requestId: string): Promise<Json[]> =>
  (await authority('GET', `/v1/receipts?request_id=${encodeURIComponent(requestId)}`))['receipts'] as Json[];

/** Submits the unit and waits for its end, returning its status and the paid calls it made. */
async function run(body: Json): Promise<{ status: Json; calls: number }> {
  const before = h.calls('ok-model');
  expect((await h.post('/v1/work', body)).status).toBe(202);
  const status = await h.terminal(body['work_id'] as string);
  return { status, calls: h.calls('ok-model') - before };
}

/** The authority's answer to the unit's own first Admit, asked before the unit runs: a preflight with a nonce. */
async function preflightFor(body: Json, token: string, extra: Json = {}): Promise<string> {
  const answer = await ledger.admit(firstAttemptOf(body).commandId, unitAdmit(body, token, extra));
  expect(answer).toMatchObject({ verdict: 'allow', dispatch: false });
  expect(answer['admission_proof']).toBeUndefined();
  return answer['execution_nonce'] as string;
}

describe('execution nonces through the orchestrator', () => {
  it('B13 O7 metered work succeeds with require_execution_nonce on: one paid call, the attempt settles ok at the realized cost, and the ledger shows the nonce issued and consumed for this request and its parameters', async () => {
    const cap = await issue();
    h.provider().script('ok-model', [
      { kind: 'stream', chunks: ['redeemed reply'], usage: { input_tokens: 5, output_tokens: 3 } },
    ]);
    const body = workBody({ token: cap['token'] });
    const { status, calls } = await run(body);
    expect(status).toMatchObject({ status: 'completed', output: 'redeemed reply' });
    expect(calls).toBe(1);
    const receipt = (await h.get(`/v1/work/${body['work_id']}/receipt`)).body;
    expect(receipt['metered']).toBe(true);
    const attempts = receipt['attempts'] as Json[];
    expect(attempts).toHaveLength(1);
    // 5 input tokens at 1,000,000/Mtok + 3 output tokens at 2,000,000/Mtok = 11 units.
    expect(attempts[0]).toMatchObject({ ordinal: 0, settlement: 'ok', usage: { cost_units: 11 } });
    const usage = await h.eventually('the realized cost at the authority', async () => {
      const u = await usageOf(cap['id']);
      return u['realized_cost_units'] === 11 ? u : undefined;
    });
    expect(usage['invocation_count']).toBe(1);

    const { requestId, parametersHash } = firstAttemptOf(body);
    const events = await ledger.events(cap['id']);
    const issued = events.filter((e) => e.type === 'NonceIssued');
    const consumed = events.filter((e) => e.type === 'NonceConsumed');
    expect(issued).toHaveLength(1);
    expect(consumed).toHaveLength(1);
    expect(consumed[0]!.payload['nonce_id']).toBe(issued[0]!.payload['nonce_id']);
    expect(consumed[0]!.payload['binding']).toMatchObject({
      request_id: requestId,
      capability_id: cap['id'],
      server_id: 'scripted',
      tool_name: 'ok-model',
      parameters_hash: parametersHash,
    });
    // The hold the attempt was admitted on is the redeem's, whose proof names the same parameters.
    const receipts = (await receiptsOf(requestId)).filter((r) => r['kind'] === 'admission');
    expect(receipts.map((r) => [r['verdict'], r['reason']])).toEqual([
      ['allow', 'execution nonce issued; present it to dispatch'],
      ['allow', expect.any(String)],
    ]);
    expect(receipts[1]!['metadata']['execution_nonce']).toMatchObject({ presented: true, consumed: true });
    expect(attempts[0]!['hold_id']).toBe(receipts[1]!['hold_id']);
  });

  it.each([
    ['other parameters', { parameters_hash: 'f'.repeat(64) }],
    ['another request id', { request_id: 'another-request' }],
  ])(
    'B15 a nonce minted for %s is refused before capture and payment: no paid call, usage 0/0',
    async (_what, minted) => {
      const cap = await issue();
      const body = workBody({ token: cap['token'] });
      // The unit's first Admit is answered before it runs, for other parameters (or another request):
      // the orchestrator gets that answer back for its command id and redeems the nonce it carries.
      await preflightFor(body, cap['token'], minted);
      const { status, calls } = await run(body);
      expect(status['status']).toBe('failed');
      expect(String(status['error'])).toContain('execution nonce does not match the request');
      expect(calls).toBe(0);
      const usage = await usageIs(cap['id'], 0, 0);
      expect(usage['realized_cost_units']).toBe(0);
      const events = await ledger.events(cap['id']);
      expect(events.filter((e) => e.type === 'InvocationCaptured')).toHaveLength(0);
      expect(events.filter((e) => e.type === 'NonceConsumed')).toHaveLength(0);
    },
  );

  it('B16 a nonce already redeemed is refused when the orchestrator redeems it: no paid call, the payment released, usage 0/0', async () => {
    const cap = await issue();
    const body = workBody({ token: cap['token'] });
    const nonce = await preflightFor(body, cap['token']);
    // The first redeem: a tool server that was handed the nonce consumes it.
    expect(await authority('POST', '/v1/nonces/redeem', { execution_nonce: nonce })).toEqual({ redeemed: true });
    const { status, calls } = await run(body);
    expect(status['status']).toBe('failed');
    expect(String(status['error'])).toContain('execution nonce was already consumed');
    expect(calls).toBe(0);
    const usage = await usageIs(cap['id'], 0, 0);
    expect(usage['realized_cost_units']).toBe(0);
    const events = await ledger.events(cap['id']);
    expect(events.filter((e) => e.type === 'NonceConsumed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'InvocationAdmitted')).toHaveLength(0);
    // The orchestrator's redeem was refused after the payment's authorization, which was released.
    const receipts = (await receiptsOf(firstAttemptOf(body).requestId)).filter((r) => r['verdict'] === 'deny');
    expect(receipts).toHaveLength(1);
    expect(receipts[0]!['command_id']).toBe(`${firstAttemptOf(body).commandId}:nonce`);
    expect(receipts[0]!['metadata']['execution_nonce']).toMatchObject({ presented: true, already_consumed: true });
    expect(receipts[0]!['metadata']['financial']).toMatchObject({ payment_release_confirmed: true });
  });

  it('B16 a second redeem of the nonce a unit paid with is refused and charges nothing more', async () => {
    const cap = await issue();
    const body = workBody({ token: cap['token'] });
    const { status, calls } = await run(body);
    expect(status['status']).toBe('completed');
    expect(calls).toBe(1);
    const paid = await h.eventually('the unit settled at the authority', async () => {
      const u = await usageOf(cap['id']);
      return u['invocation_count'] === 1 && u['realized_cost_units'] > 0 ? u : undefined;
    });
    const { commandId } = firstAttemptOf(body);
    // The unit's own preflight, replayed by its command id, hands back the nonce the unit redeemed.
    const replayed = await ledger.admit(commandId, unitAdmit(body, cap['token']));
    expect(replayed).toMatchObject({ verdict: 'allow', dispatch: false });
    const again = await ledger.admit(
      `${commandId}:second-redeem`,
      unitAdmit(body, cap['token'], { execution_nonce: replayed['execution_nonce'] }),
    );
    // The request's hold was dispatched already: the redeem is refused before its nonce is even checked.
    expect(again['verdict']).toBe('deny');
    expect(String(again['reason'])).toContain('already dispatched');
    expect(again['admission_proof']).toBeUndefined();
    const after = await usageOf(cap['id']);
    expect(after).toMatchObject({
      invocation_count: 1,
      committed_cost_units: paid['committed_cost_units'],
      realized_cost_units: paid['realized_cost_units'],
    });
    expect((await ledger.events(cap['id'])).filter((e) => e.type === 'NonceConsumed')).toHaveLength(1);
  });
});
