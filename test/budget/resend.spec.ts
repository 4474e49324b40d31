// Proves the core request/reply path of ADR 0025 on real authority processes: a command whose reply was lost is answered from the ledger on its re-send, one command at two replicas at once converges, and an authority SIGKILLed mid-Admit is finished by the retried command id after a restart.
import { afterEach, describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { Headers } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { CommandTimeout } from '@tally/platform-nest';
import { sharedNatsUrl } from '@tally/testing';
import { admitPayload, AuthorityStack, eventually, monetaryGrant, type Json } from './support/authority-stack.js';

let stack: AuthorityStack | undefined;
afterEach(async () => {
  await stack?.dispose();
  stack = undefined;
}, 120_000);

const hookOf = async (s: AuthorityStack) => (await s.faults({})).map((r) => r['hook'] as Json);
const captures = async (s: AuthorityStack, capId: string) =>
  (await s.events(capId)).filter((e) => e['kind'] === 'capture_invocation');
/** Projection-backed reads after a replica change: the projector lease may still be moving to the survivor. */
const usageIs = (s: AuthorityStack, capId: string, count: number, committed: number) =>
  eventually(
    () => s.usage(capId),
    (u) => u['invocation_count'] === count && u['committed_cost_units'] === committed,
    60_000,
    `usage ${count}/${committed}`,
  );

describe('core request/reply commands answered from the ledger (issue 13)', () => {
  it('issue 13 lost reply: an Admit and a Settle whose replies never arrived get the recorded answers on their re-sends, and nothing more is appended', async () => {
    stack = await AuthorityStack.create('bresend');
    await stack.start();
    const s = stack;
    const cap = await s.issue([monetaryGrant()]);
    const nc = await connectNats({
      url: sharedNatsUrl(),
      name: 'lost-replies',
      connectTimeoutMs: 5_000,
      maxReconnectAttempts: 0,
      reconnectTimeWaitMs: 100,
    });
    try {
      // The request goes out with a reply subject nobody listens on: the authority answers into the void.
      const sendLosingReply = (command: string, commandId: string, payload: Json) => {
        const hdrs = natsHeaders();
        hdrs.set(Headers.commandId, commandId);
        nc.publish(s.names.requestSubject('budget', command), JSON.stringify(payload), {
          reply: `_LOST.${commandId}`,
          headers: hdrs,
        });
      };
      const receiptOf = (commandId: string) =>
        eventually(
          () => s.http('GET', `/v1/receipts/${encodeURIComponent(`receipt:${cap['root_id']}:${commandId}`)}`),
          (r) => r.status === 200,
          30_000,
          `receipt of ${commandId}`,
        );
      sendLosingReply('admit', 'lost-admit-1', admitPayload(cap['token'], 'lost-1', 'standalone'));
      const recorded = (await receiptOf('lost-admit-1')).body;
      const admitted = await s.admit(admitPayload(cap['token'], 'lost-1', 'standalone'), 'lost-admit-1');
      expect(admitted['verdict']).toBe('allow');
      expect(admitted['receipt']).toEqual(recorded);
      expect(await s.admit(admitPayload(cap['token'], 'lost-1', 'standalone'), 'lost-admit-1')).toEqual(admitted);

      const settle = {
        hold_id: admitted['hold_id'],
        outcome: { kind: 'completed', cost_units: 40, currency: 'USD' },
        admission_proof: admitted['admission_proof'],
      };
      sendLosingReply('settle', 'lost-settle-1', settle);
      const settledReceipt = (await receiptOf('lost-settle-1')).body;
      expect((await s.settle(settle, 'lost-settle-1'))['receipt']).toEqual(settledReceipt);
      const events = await s.events(cap['id']);
      expect(events.map((e) => e['kind']).sort()).toEqual([
        'authorize_exposure',
        'capture_invocation',
        'reconcile_spend',
      ]);
      await usageIs(s, cap['id'], 1, 40);
    } finally {
      await nc.drain();
    }
  }, 180_000);

  it('issue 13 two replicas at once: one command held at the hook on both replicas converges on one answer, one capture, one lease kept', async () => {
    stack = await AuthorityStack.create('btwice', { commandTimeoutMs: 60_000, commandAttemptsMax: 1 });
    const s = stack;
    await s.start();
    await s.faults({ hook: { lease: true, block: true } });
    const cap = await s.issue([monetaryGrant()]);
    const payload = admitPayload(cap['token'], 'twice-1', 'standalone');
    const copies = [s.admit(payload, 'twice-cmd')];
    await eventually(
      () => hookOf(s),
      (h) => h[0]!['blocked'] === 1,
      30_000,
      'the first copy at the hook',
    );
    await s.start();
    await s.faults({ hook: { lease: true, block: true } });
    // The queue group picks a replica per request; a copy that reaches the first one joins the run already there.
    for (let i = 0; i < 40 && (await hookOf(s))[1]!['blocked'] === 0; i++) {
      copies.push(s.admit(payload, 'twice-cmd'));
      await new Promise((r) => setTimeout(r, 100));
    }
    await eventually(
      () => hookOf(s),
      (h) => h.every((x) => x['blocked'] === 1),
      30_000,
      'a copy at each replica',
    );
    await s.faults({ hook: { block: false } });
    const answers = await Promise.all(copies);
    expect(answers[0]!['verdict']).toBe('allow');
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    await usageIs(s, cap['id'], 1, 100);
    expect(await captures(s, cap['id'])).toHaveLength(1);
    const hooks = await hookOf(s);
    // Each replica reserved a lease; the one whose run lost released its own.
    expect(hooks.map((h) => h['reserved'])).toEqual([1, 1]);
    expect(hooks.reduce((n, h) => n + (h['released'] as number), 0)).toBe(1);
  }, 180_000);

  it('issue 13 killed mid-Admit: the authority is SIGKILLed while the Admit waits on the rail after its capture; after a restart the retried command id is allowed once, and retries agree', async () => {
    stack = await AuthorityStack.create('bkilled', { commandTimeoutMs: 2_000, commandAttemptsMax: 5 });
    const s = stack;
    const first = await s.start();
    const cap = await s.issue([monetaryGrant()]);
    await s.faults({ rail: { authorize: 'block_until_released' } });
    const payload = admitPayload(cap['token'], 'killed-1', 'standalone');
    const inFlight = s.admit(payload, 'killed-cmd').catch((error: unknown) => error);
    await eventually(
      async () => ((await s.faults({}))[0]!['rail'] as Json)['authorize'],
      (n) => n === 1,
      30_000,
      'the Admit at the rail, after its capture',
    );
    await first.stop('SIGKILL');
    await s.start();
    const retried = await s.admit(payload, 'killed-cmd');
    expect(retried).toMatchObject({ verdict: 'allow', dispatch: true });
    // The send in flight during the crash either timed out (an unknown outcome) or got the same answer.
    const during = await inFlight;
    if (during instanceof CommandTimeout) expect(during.commandId).toBe('killed-cmd');
    else expect(during).toEqual(retried);
    await usageIs(s, cap['id'], 1, 100);
    expect(retried['receipt']['metadata']['budget_authority']['invocation_capture']['event_id']).toBe(
      (await captures(s, cap['id']))[0]!['event_id'],
    );
    expect(await s.admit(payload, 'killed-cmd')).toEqual(retried);
    expect(await captures(s, cap['id'])).toHaveLength(1);
    // A new command with the same request id is still a replay (B7).
    expect(await s.admit(payload)).toMatchObject({
      verdict: 'deny',
      reason: 'monetary invocation was already dispatched',
    });
  }, 240_000);

  it('ADR 0025 with nats.budget_commands=jetstream the durable command stream of ADR 0003 still carries Admit and Settle, and a repeated command id gets the same answer', async () => {
    stack = await AuthorityStack.create('bdurable', { env: { TALLY__NATS__BUDGET_COMMANDS: 'jetstream' } });
    const s = stack;
    await s.start();
    expect(s.durableCommands).toBe(true);
    const cap = await s.issue([monetaryGrant()]);
    const payload = admitPayload(cap['token'], 'durable-1', 'standalone');
    const admitted = await s.admit(payload, 'durable-cmd');
    expect(admitted['verdict']).toBe('allow');
    expect(await s.admit(payload, 'durable-cmd')).toEqual(admitted);
    const settled = await s.settle({
      hold_id: admitted['hold_id'],
      outcome: { kind: 'completed', cost_units: 7, currency: 'USD' },
    });
    expect(settled['receipt']['settlement']).toBe('completed');
    await usageIs(s, cap['id'], 1, 7);
  }, 180_000);
});
