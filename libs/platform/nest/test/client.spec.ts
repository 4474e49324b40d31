// Proves the caller's side: a command sent while no replica runs is kept and answered
// once one starts, the caller gives up with a typed CommandTimeout (never a guess), and
// the Nest ClientProxy wrapper maps answers and refusals onto its observable.
import { afterEach, describe, expect, it } from '@jest/globals';
import { lastValueFrom } from 'rxjs';
import { CommandTimeout, JetStreamCommandClientProxy } from '../src/index.js';
import type { AppendReply } from './fixtures.js';
import { eventually, Harness } from './fixtures.js';

describe('durable commands: the client', () => {
  let h: Harness;
  afterEach(async () => h?.dispose());

  it('a command sent while no replica runs times out with CommandTimeout, stays queued, and is answered once a replica starts', async () => {
    h = await Harness.create('cli');
    const { app } = await h.startServer('a'); // provisions the stream, consumer and cache
    await app.close();
    const client = await h.client();
    const payload = { account: 'acct-q', amount: 4 };
    const error = await client
      .send('work', 'append', 'cmd-queued', payload, { timeoutMs: 200, attemptsMax: 2 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandTimeout);
    expect(error).toMatchObject({ commandId: 'cmd-queued', attempts: 2 });
    // Re-published with the same message id: stored once.
    expect(await h.messagesIn(h.names.commandsStream)).toBe(1);

    await h.startServer('b');
    await eventually(
      () => h.messagesIn(h.names.commandsStream),
      (n) => n === 0,
      5000,
    );
    const answer = await client.send<AppendReply>('work', 'append', 'cmd-queued', payload, {
      timeoutMs: 2000,
      attemptsMax: 1,
    });
    expect(answer).toMatchObject({ ok: true, value: { account: 'acct-q', instance: 'b' } });
    expect(h.probe.callsOf('cmd-queued')).toBe(1);
  });

  it('the ClientProxy wrapper emits the answer, errors with the CommandError on a refusal, and carries traceparent metadata', async () => {
    h = await Harness.create('cli');
    await h.startServer('a');
    const proxy = new JetStreamCommandClientProxy(await h.client(), { timeoutMs: 5000, attemptsMax: 2 });
    const traceparent = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    proxy.setOnDispatchHook((packet) => (packet.metadata = { traceparent }));
    const pattern = { service: 'work', command: 'append' } as const;
    const value = await lastValueFrom(
      proxy.send<AppendReply>(pattern, { commandId: 'cmd-proxy', payload: { account: 'acct-p', amount: 1 } }),
    );
    expect(value).toMatchObject({ account: 'acct-p', traceparent });
    const refused = await lastValueFrom(
      proxy.send(pattern, { commandId: 'cmd-proxy-bad', payload: { account: 'acct-p' } }),
    ).catch((e: unknown) => e);
    expect(refused).toMatchObject({ type: 'validation' });
    expect(new Set((refused as { errors: { field: string }[] }).errors.map((e) => e.field))).toEqual(
      new Set(['amount']),
    );
  });
});
