// Proves that a command is acknowledged only after the events its handler appended are
// in the stream: a handler that dies between append and ack is redelivered, and the
// rerun appends nothing new because the event id derives from the command id.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { AppendReply } from './fixtures.js';
import { deferred, eventually, Harness } from './fixtures.js';

describe('durable commands: ack after append', () => {
  let h: Harness;
  afterEach(async () => h?.dispose());

  it('a command is acked only after its events are appended: a server lost between append and ack leaves it queued, and the redelivery appends once', async () => {
    h = await Harness.create('ord');
    const first = await h.startServer('a');
    const appended = deferred();
    const release = deferred();
    h.probe.afterAppend = async (_id, call) => {
      if (call > 1) return;
      appended.resolve();
      await release.promise;
    };
    const client = await h.client();
    const reply = client.send<AppendReply>(
      'work',
      'append',
      'cmd-ord-1',
      { account: 'acct-1', amount: 7 },
      { timeoutMs: 8000, attemptsMax: 2 },
    );

    await appended.promise;
    // The event is committed, and the command is still in the work queue: it has not been acked.
    expect((await h.store.load(h.names.workEventSubject('acct-1'))).events).toHaveLength(1);
    expect(await h.messagesIn(h.names.commandsStream)).toBe(1);

    // The replica dies before it can cache, reply or ack; another one takes over.
    await first.nc.close();
    release.resolve();
    await h.startServer('b');

    const answer = await reply;
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(answer.value.instance).toBe('b');
    expect(answer.value.duplicate).toBe(true);
    expect(h.probe.callsOf('cmd-ord-1')).toBe(2);
    const { events } = await h.store.load(h.names.workEventSubject('acct-1'));
    expect(events.map((e) => e.event.eventId)).toEqual(['evt-cmd-ord-1']);
    expect(answer.value.sequence).toBe(events[0]!.sequence);
    expect(
      await eventually(
        () => h.messagesIn(h.names.commandsStream),
        (n) => n === 0,
        5000,
      ),
    ).toBe(0);
  });

  it('a command is acked only after its events are appended: a handler that fails after appending is retried and the event appears exactly once', async () => {
    h = await Harness.create('ord');
    await h.startServer('a');
    h.probe.afterAppend = async (_id, call) => {
      if (call === 1) throw new Error('crash after append, before the reply');
    };
    const client = await h.client();
    const answer = await client.send<AppendReply>(
      'work',
      'append',
      'cmd-ord-2',
      { account: 'acct-2', amount: 3 },
      { timeoutMs: 5000, attemptsMax: 2 },
    );
    expect(answer).toMatchObject({ ok: true, value: { account: 'acct-2', duplicate: true } });
    expect(h.probe.callsOf('cmd-ord-2')).toBe(2);
    const { events } = await h.store.load(h.names.workEventSubject('acct-2'));
    expect(events.map((e) => e.event.eventId)).toEqual(['evt-cmd-ord-2']);
    expect(
      await eventually(
        () => h.messagesIn(h.names.commandsStream),
        (n) => n === 0,
        5000,
      ),
    ).toBe(0);
    expect(await h.deadLetters()).toEqual([]);
  });
});
