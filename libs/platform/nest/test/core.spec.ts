// Proves the core request/reply transport of ADR 0025 on a real nats-server: each request reaches one replica of the queue group, bad input is answered field by field and dead-lettered once, and a request no replica decided (no responders, a failing handler, an unknown command) is re-sent with the same command id until it is answered or the outcome is declared unknown.
import { afterEach, describe, expect, it } from '@jest/globals';
import { CommandTimeout, type CommandError } from '../src/index.js';
import { eventually, Harness } from './fixtures.js';

const send = { timeoutMs: 5000, attemptsMax: 3 } as const;

describe('core request/reply commands', () => {
  let h: Harness;
  afterEach(async () => h?.dispose());

  it('ADR 0025 queue group: every request is handled by exactly one of two replicas and answered straight back', async () => {
    h = await Harness.create('core');
    await h.startCoreServer('a');
    await h.startCoreServer('b');
    const client = h.coreClient();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        client.send('work', 'append', `core-${i}`, { account: `acct-${i}`, amount: 1 }, send),
      ),
    );
    expect(answers.every((a) => a.ok)).toBe(true);
    for (let i = 0; i < 40; i++) expect(h.probe.callsOf(`core-${i}`)).toBe(1);
    expect(new Set(h.probe.handledBy)).toEqual(new Set(['a', 'b']));
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(40);
  });

  it('ADR 0025 invalid payload: field-by-field errors, one dead letter even when the same command id is re-sent, nothing appended', async () => {
    h = await Harness.create('corebad');
    await h.startCoreServer('a');
    const client = h.coreClient();
    const bad = { account: '', amount: 0, extra: true };
    const answer = await client.send('work', 'append', 'core-bad', bad, send);
    expect(answer.ok).toBe(false);
    if (answer.ok) return;
    const error = answer.error as Extract<CommandError, { type: 'validation' }>;
    expect(error.type).toBe('validation');
    expect(error.errors.map((e) => e.field).sort()).toEqual(['account', 'amount', 'extra']);
    expect(await client.send('work', 'append', 'core-bad', bad, send)).toEqual(answer);
    const letters = await eventually(
      () => h.deadLetters(),
      (l) => l.length >= 1,
      5000,
    );
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      reason: 'validation_failed',
      source: 'work-commands',
      original_subject: h.names.requestSubject('work', 'append'),
      original_stream: null,
    });
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(0);
  });

  it('ADR 0025 no responders: the client re-sends until a replica subscribes, and declares the outcome unknown when none does', async () => {
    h = await Harness.create('corenone');
    const client = h.coreClient(100);
    await expect(
      client.send('work', 'ping', 'nobody-1', {}, { timeoutMs: 500, attemptsMax: 2 }),
    ).rejects.toBeInstanceOf(CommandTimeout);
    const later = client.send('work', 'ping', 'later-1', {}, { timeoutMs: 1000, attemptsMax: 50 });
    await new Promise((r) => setTimeout(r, 300));
    await h.startCoreServer('a');
    expect(await later).toEqual({ ok: true, value: { pong: 'later-1' } });
  });

  it('ADR 0025 a failing handler is answered unavailable: the client re-sends the same command id, whose second append is a duplicate on the ledger', async () => {
    h = await Harness.create('coreretry');
    await h.startCoreServer('a');
    // The first run appends and then fails before it answers: only the ledger remembers it.
    h.probe.afterAppend = async (_id, call) => {
      if (call === 1) throw new Error('crashed after the append');
    };
    const answer = await h.coreClient().send('work', 'append', 'core-flaky', { account: 'flaky', amount: 2 }, send);
    expect(answer).toMatchObject({ ok: true, value: { account: 'flaky', duplicate: true } });
    expect(h.probe.callsOf('core-flaky')).toBe(2);
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(1);

    await expect(
      h.coreClient().send('work', 'append', 'core-doomed', { account: 'doomed', amount: 1 }, send),
    ).rejects.toBeInstanceOf(CommandTimeout);
    expect(h.probe.callsOf('core-doomed')).toBe(3);
    await expect(h.coreClient().send('work', 'unknown', 'core-unknown', {}, send)).rejects.toBeInstanceOf(
      CommandTimeout,
    );
  });

  it('ADR 0025 a deliberate refusal is a final answer, dead-lettered as handler_rejected', async () => {
    h = await Harness.create('corerej');
    await h.startCoreServer('a');
    const answer = await h.coreClient().send('work', 'append', 'core-closed', { account: 'closed', amount: 1 }, send);
    expect(answer).toMatchObject({ ok: false, error: { type: 'rejected', reason: 'account_closed' } });
    expect(h.probe.callsOf('core-closed')).toBe(1);
    const letters = await eventually(
      () => h.deadLetters(),
      (l) => l.length >= 1,
      5000,
    );
    expect(letters[0]).toMatchObject({ reason: 'handler_rejected', source: 'work-commands' });
  });
});
