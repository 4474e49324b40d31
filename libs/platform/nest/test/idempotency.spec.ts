// Proves that a command id is the retry key: repeating it, one after another, at the
// same moment, from another caller, or after the stream's duplicate window, returns the
// original answer and never runs the handler again.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { AppendReply } from './fixtures.js';
import { eventually, Harness } from './fixtures.js';

const send = { timeoutMs: 5000, attemptsMax: 2 } as const;

describe('durable commands: idempotency by command id', () => {
  let h: Harness;
  afterEach(async () => h?.dispose());

  it('a repeated command id gets the original answer and the handler runs once (sequential)', async () => {
    h = await Harness.create('idem');
    await h.startServer('a');
    const client = await h.client();
    const first = await client.send<AppendReply>('work', 'append', 'cmd-seq', { account: 'acct-s', amount: 1 }, send);
    const second = await client.send<AppendReply>('work', 'append', 'cmd-seq', { account: 'acct-s', amount: 1 }, send);
    const other = await (
      await h.client()
    ).send<AppendReply>('work', 'append', 'cmd-seq', { account: 'acct-s', amount: 1 }, send);
    expect(first.ok).toBe(true);
    expect(second).toEqual(first);
    expect(other).toEqual(first);
    expect(h.probe.callsOf('cmd-seq')).toBe(1);
    expect((await h.store.load(h.names.workEventSubject('acct-s'))).events).toHaveLength(1);
  });

  it('a repeated command id gets the original answer and the handler runs once (concurrent, one and two callers)', async () => {
    h = await Harness.create('idem');
    await h.startServer('a');
    h.probe.delayMs = 100; // keep the first delivery busy while the repeats arrive
    const [c1, c2] = [await h.client(), await h.client()];
    const payload = { account: 'acct-c', amount: 2 };
    const answers = await Promise.all([
      c1.send<AppendReply>('work', 'append', 'cmd-conc', payload, send),
      c1.send<AppendReply>('work', 'append', 'cmd-conc', payload, send),
      c2.send<AppendReply>('work', 'append', 'cmd-conc', payload, send),
    ]);
    expect(answers[0]!.ok).toBe(true);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    expect(h.probe.callsOf('cmd-conc')).toBe(1);
    expect((await h.store.load(h.names.workEventSubject('acct-c'))).events).toHaveLength(1);
  });

  it('a command repeated after the duplicate window is answered from the reply cache without running the handler', async () => {
    h = await Harness.create('idem', { commandsDuplicateWindowMs: 1000 });
    await h.startServer('a');
    const client = await h.client();
    const first = await client.send<AppendReply>('work', 'append', 'cmd-late', { account: 'acct-l', amount: 3 }, send);
    await new Promise((r) => setTimeout(r, 1500));
    const before = (await h.jsm.streams.info(h.names.commandsStream)).state.last_seq;
    const again = await client.send<AppendReply>('work', 'append', 'cmd-late', { account: 'acct-l', amount: 3 }, send);
    // The stream no longer remembers the id, so the repeat was stored and delivered again…
    expect((await h.jsm.streams.info(h.names.commandsStream)).state.last_seq).toBe(before + 1);
    // …and the server answered it from the cache and acked it.
    expect(again).toEqual(first);
    expect(h.probe.callsOf('cmd-late')).toBe(1);
    expect(
      await eventually(
        () => h.messagesIn(h.names.commandsStream),
        (n) => n === 0,
        5000,
      ),
    ).toBe(0);
  });
});
