// Proves how bad or failing commands end: invalid input is answered field by field (not
// "Internal server error") and dead-lettered with nothing appended; malformed JSON and a
// missing command id likewise; a deliberate refusal is final; a handler that keeps
// failing is retried with backoff and dead-lettered at the delivery limit.
import { afterEach, describe, expect, it } from '@jest/globals';
import { headers as natsHeaders, createInbox, type Msg } from '@nats-io/nats-core';
import { Headers } from '@tally/contracts';
import { decodeReply, type CommandError } from '../src/index.js';
import { eventually, Harness } from './fixtures.js';

const send = { timeoutMs: 5000, attemptsMax: 2 } as const;

describe('durable commands: refusals and dead letters', () => {
  let h: Harness;
  afterEach(async () => h?.dispose());

  it('invalid payload: the caller gets field-by-field errors, the command is dead-lettered with reason and fields, and no event is appended', async () => {
    h = await Harness.create('bad');
    await h.startServer('a');
    const client = await h.client();
    const bad = { account: '', amount: 0, extra: true, meta: { note: 5 } };
    const answer = await client.send('work', 'append', 'cmd-bad', bad, send);
    expect(answer.ok).toBe(false);
    if (answer.ok) return;
    const error = answer.error as Extract<CommandError, { type: 'validation' }>;
    expect(error.type).toBe('validation');
    expect(error.errors.map((e) => e.field).sort()).toEqual(['account', 'amount', 'extra', 'meta.note']);
    expect(JSON.stringify(answer)).not.toContain('Internal server error');

    const letters = await eventually(
      () => h.deadLetters(),
      (l) => l.length === 1,
      5000,
    );
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      reason: 'validation_failed',
      source: 'work-commands',
      original_subject: h.names.commandSubject('work', 'append'),
    });
    expect(letters[0]!['errors']).toEqual(error.errors);
    expect(h.probe.callsOf('cmd-bad')).toBe(0);
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(0);
    expect(
      await eventually(
        () => h.messagesIn(h.names.commandsStream),
        (n) => n === 0,
        5000,
      ),
    ).toBe(0);

    // The same bad command again: the same answer, and no second dead letter.
    expect(await client.send('work', 'append', 'cmd-bad', bad, send)).toEqual(answer);
    expect(await h.deadLetters()).toHaveLength(1);
  });

  it('malformed JSON, a non-object body and a missing command id are answered with field errors and dead-lettered', async () => {
    h = await Harness.create('bad');
    await h.startServer('a');
    const inbox = createInbox();
    const replies: Msg[] = [];
    const sub = h.nc.subscribe(inbox, { callback: (_e, msg) => void replies.push(msg) });
    const publish = async (commandId: string | undefined, body: string) => {
      const hdrs = natsHeaders();
      if (commandId) hdrs.set(Headers.commandId, commandId);
      hdrs.set(Headers.replyTo, inbox);
      await h.js.publish(h.names.commandSubject('work', 'append'), body, {
        headers: hdrs,
        ...(commandId ? { msgID: commandId } : {}),
      });
    };
    await publish('cmd-json', '{"account": "acct", ');
    await publish(undefined, '{"account": "acct", "amount": 1}');
    await publish('cmd-string', '"not an object"');
    await eventually(
      async () => replies.length,
      (n) => n === 3,
      5000,
    );
    sub.unsubscribe();

    const byId = new Map(replies.map((m) => [m.headers?.get(Headers.commandId) ?? '', decodeReply(m.data)]));
    expect(byId.get('cmd-json')).toMatchObject({ ok: false, error: { type: 'validation', errors: [{ field: '$' }] } });
    expect(byId.get('')).toMatchObject({
      ok: false,
      error: { type: 'validation', errors: [{ field: `headers.${Headers.commandId}`, message: 'is required' }] },
    });
    // Valid JSON of the wrong shape is the pipe's business: a validation failure, not "Internal server error".
    expect(byId.get('cmd-string')).toMatchObject({ ok: false, error: { type: 'validation' } });
    const letters = await eventually(
      () => h.deadLetters(),
      (l) => l.length === 3,
      5000,
    );
    expect(letters.map((l) => l['reason']).sort()).toEqual(['decode_failed', 'decode_failed', 'validation_failed']);
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(0);
  });

  it('a handler that refuses with a typed RpcException gets a final rejected answer, dead-lettered as handler_rejected, not retried', async () => {
    h = await Harness.create('bad');
    await h.startServer('a');
    const client = await h.client();
    const answer = await client.send('work', 'append', 'cmd-closed', { account: 'closed', amount: 1 }, send);
    expect(answer).toEqual({
      ok: false,
      error: {
        type: 'rejected',
        reason: 'account_closed',
        message: 'account is closed',
        detail: { type: 'account_closed', message: 'account is closed' },
      },
    });
    expect(h.probe.callsOf('cmd-closed')).toBe(1);
    const letters = await eventually(
      () => h.deadLetters(),
      (l) => l.length === 1,
      5000,
    );
    expect(letters[0]).toMatchObject({ reason: 'handler_rejected' });
  });

  it('a handler that keeps failing is retried with backoff, then dead-lettered as max_deliveries_exceeded and answered', async () => {
    h = await Harness.create('bad');
    await h.startServer('a');
    const client = await h.client();
    const started = Date.now();
    const answer = await client.send('work', 'append', 'cmd-doomed', { account: 'doomed', amount: 1 }, send);
    expect(answer).toMatchObject({ ok: false, error: { type: 'max_deliveries_exceeded', deliveries: 4 } });
    expect(h.probe.callsOf('cmd-doomed')).toBe(4);
    // Backoff 50, 100, 200 ms between the four attempts.
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    const letters = await eventually(
      () => h.deadLetters(),
      (l) => l.length === 1,
      5000,
    );
    expect(letters[0]).toMatchObject({ reason: 'max_deliveries_exceeded', deliveries: 4 });
    expect(
      await eventually(
        () => h.messagesIn(h.names.commandsStream),
        (n) => n === 0,
        5000,
      ),
    ).toBe(0);
  });
});
