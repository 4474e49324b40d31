// Proves correlation and sharing under load: many commands in flight on one client each
// get their own reply, and replicas of a service share one durable consumer so each
// command is handled exactly once.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { AppendReply } from './fixtures.js';
import { Harness, Probe } from './fixtures.js';

const send = { timeoutMs: 10_000, attemptsMax: 2 } as const;

describe('durable commands: correlation and shared consumers', () => {
  let h: Harness;
  afterEach(async () => h?.dispose());

  it('replies are correlated: 200 concurrent commands on one client each get their own reply, with their trace context', async () => {
    h = await Harness.create('corr');
    await h.startServer('a');
    const client = await h.client();
    const n = 200;
    const traceparent = (i: number) => `00-${i.toString(16).padStart(32, '0')}-${'b'.repeat(16)}-01`;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        client.send<AppendReply>(
          'work',
          'append',
          `cmd-corr-${i}`,
          { account: `acct-${i}`, amount: i + 1 },
          { ...send, traceparent: traceparent(i) },
        ),
      ),
    );
    answers.forEach((answer, i) => {
      expect(answer).toMatchObject({
        ok: true,
        value: { account: `acct-${i}`, duplicate: false, traceparent: traceparent(i) },
      });
    });
    const sequences = answers.map((a) => (a.ok ? a.value.sequence : -1));
    expect(new Set(sequences).size).toBe(n);
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(n);
  });

  it('two server instances share the consumer: each command is handled exactly once, and both do work', async () => {
    h = await Harness.create('share');
    const probeA = new Probe(h.store, h.names);
    const probeB = new Probe(h.store, h.names);
    probeA.delayMs = probeB.delayMs = 5;
    await h.startServer('a', probeA);
    await h.startServer('b', probeB);
    const client = await h.client();
    const n = 120;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        client.send<AppendReply>('work', 'append', `cmd-share-${i}`, { account: `acct-${i}`, amount: 1 }, send),
      ),
    );
    expect(answers.every((a) => a.ok && !a.value.duplicate)).toBe(true);
    for (let i = 0; i < n; i++) expect(probeA.callsOf(`cmd-share-${i}`) + probeB.callsOf(`cmd-share-${i}`)).toBe(1);
    expect(probeA.invocations + probeB.invocations).toBe(n);
    expect(probeA.invocations).toBeGreaterThan(0);
    expect(probeB.invocations).toBeGreaterThan(0);
    expect(await h.messagesIn(h.names.workEventsStream)).toBe(n);
  });
});
