// Proves the dispatch worker against real NATS JetStream and a real HTTP provider: O1 retry
// then success, O2 the fail-closed ceiling, O3 aborts keep partial output, O4 the audit
// survives a restart, O7 admission before every paid call.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { messagesOf } from '@tally/orchestrator-domain';
import type { ProviderGateway } from '@tally/orchestrator-application';
import { commitTypesAfter, countUnitReads, InMemoryBudget, workFixture, type WorkFixture } from './work.fixture.js';

/** The real gateway, calling `then` shortly after the first streamed chunk of an attempt arrived. */
function onFirstChunk(gateway: ProviderGateway, then: () => void): ProviderGateway {
  return {
    dispatch: (req, signal, onProgress) => {
      let fired = false;
      return gateway.dispatch(req, signal, () => {
        onProgress?.();
        if (!fired) {
          fired = true;
          setTimeout(then, 50);
        }
      });
    },
  };
}

describe('dispatch worker', () => {
  let f: WorkFixture;
  beforeEach(async () => {
    f = await workFixture('orch');
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('O1 a network failure then success completes: 2 attempts, winning_attempt 1, provider usage, projection is prompt + reply', async () => {
    f.provider.script('flaky-model', [
      { kind: 'reset' },
      { kind: 'stream', chunks: ['do', 'ne'], usage: { input_tokens: 5, output_tokens: 3 } },
    ]);
    await f.submit('o1', { route: [{ provider: 'scripted', model: 'flaky-model' }] });
    let progress = 0;
    const result = await f.worker().process('o1', { onProgress: () => progress++ });

    expect(result).toMatchObject({ kind: 'ended', work_id: 'o1', status: 'completed', output: 'done' });
    expect(result.kind === 'ended' && result.state.status).toBe('completed');
    const receipt = await f.units.receipt('o1');
    expect(receipt?.purpose).toBe('execute');
    expect(receipt?.attempts).toHaveLength(2);
    expect(receipt?.attempts[0]).toMatchObject({
      ordinal: 0,
      reason: 'initial',
      domain: 'network',
      settlement: 'unknown',
    });
    expect(receipt?.attempts[1]).toMatchObject({
      ordinal: 1,
      reason: 'retry',
      settlement: 'ok',
      usage: { input_tokens: 5, output_tokens: 3, cost_units: 11n },
    });
    expect(receipt?.winning_attempt).toBe(1);
    expect(await f.units.messages(['o1'])).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'done' },
    ]);
    expect(f.provider.calls('flaky-model')).toBe(2);
    expect(progress).toBeGreaterThan(0);
    // The unrated network attempt keeps its whole hold; the reply settles at its realized cost.
    expect(f.budget.effectiveSettles().map((s) => s.outcome)).toEqual([
      { kind: 'failed_after_dispatch', failure: 'incomplete' },
      { kind: 'completed', cost_units: 11n, currency: 'USD', tokens_used: 8 },
    ]);
  });

  it('a successful dispatch costs one read of the unit and three commits after submission: the worker plans on the view its appends return, and the hold settlement and the conclusion share a commit', async () => {
    f.provider.script('ok-model', [{ kind: 'stream', chunks: ['fine'], usage: { input_tokens: 2, output_tokens: 1 } }]);
    await f.submit('lean', { route: [{ provider: 'scripted', model: 'ok-model' }] });
    const subject = f.names.workEventSubject('lean');
    const before = (await f.jsm.streams.getMessage(f.names.workEventsStream, { last_by_subj: subject }))!.seq;
    const reads = await countUnitReads(f);
    // A long abort poll keeps the abort watch's own reads out of the count.
    expect(await f.worker({ options: { abortPollMs: 60_000 } }).process('lean')).toMatchObject({
      kind: 'ended',
      status: 'completed',
      output: 'fine',
    });
    expect(await reads.stop()).toBe(1);
    expect(await commitTypesAfter(f, subject, before)).toEqual([
      'AttemptStarted',
      'AttemptSettled',
      'HoldSettled,WorkCompleted',
    ]);
  });

  it('with a budget that settles locally (unmetered), a successful dispatch is two commits after submission: the outcome, the hold settlement and the conclusion share one', async () => {
    f.provider.script('ok-model', [{ kind: 'stream', chunks: ['fine'], usage: { input_tokens: 2, output_tokens: 1 } }]);
    await f.submit('local', { route: [{ provider: 'scripted', model: 'ok-model' }] });
    const subject = f.names.workEventSubject('local');
    const before = (await f.jsm.streams.getMessage(f.names.workEventsStream, { last_by_subj: subject }))!.seq;
    const budget = Object.assign(new InMemoryBudget(), { settlesLocally: true });
    expect(await f.worker({ budget }).process('local')).toMatchObject({
      kind: 'ended',
      status: 'completed',
      output: 'fine',
    });
    expect(await commitTypesAfter(f, subject, before)).toEqual([
      'AttemptStarted',
      'AttemptSettled,HoldSettled,WorkCompleted',
    ]);
    expect((await f.units.receipt('local'))?.winning_attempt).toBe(0);
  });

  it('O2 an always-429 provider with ceiling 2 fails closed: 2 account/failed attempts, no winner, no paid call past the ceiling', async () => {
    f.provider.always('limited-model', { kind: 'status', status: 429 });
    await f.submit('o2', {
      route: [{ provider: 'scripted', model: 'limited-model' }],
      limits: { max_retries: 1, run_retry_attempts: 0, dispatch_ceiling: 2 },
    });
    const result = await f.worker().process('o2');

    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(result.kind === 'ended' && result.error).toContain('dispatch ceiling of 2');
    const receipt = await f.units.receipt('o2');
    expect(receipt?.attempts).toHaveLength(2);
    expect(receipt?.attempts.every((a) => a.domain === 'account' && a.settlement === 'failed')).toBe(true);
    expect(receipt?.winning_attempt).toBeNull();
    // A redelivery of the failed unit makes no further call and admits nothing more.
    await f.worker().process('o2');
    expect(f.provider.calls('limited-model')).toBe(2);
    expect(f.budget.admits).toHaveLength(2);
  });

  it('O3 an abort mid-stream ends the work Aborted: attempt cancelled, partial output kept in the log and projection, never retried', async () => {
    f.provider.script('slow-model', [{ kind: 'stream', chunks: ['partial ', 'answer'], end: 'hang' }]);
    await f.submit('o3', { route: [{ provider: 'scripted', model: 'slow-model' }], limits: { max_retries: 3 } });
    // Abort through the API path once the stream has delivered its chunks.
    const gateway = onFirstChunk(f.gateway, () => void f.units.requestAbort('o3', 'user pressed stop', 'abort-o3'));
    const result = await f.worker({ gateway }).process('o3');

    expect(result).toMatchObject({ kind: 'ended', status: 'aborted' });
    const receipt = await f.units.receipt('o3');
    expect(receipt?.attempts).toHaveLength(1);
    expect(receipt?.attempts[0]?.settlement).toBe('cancelled');
    expect(receipt?.winning_attempt).toBeNull();
    const log = await f.units.sessionLog(['o3']);
    expect(log.map((e) => e.kind)).toEqual(['header', 'message', 'receipt', 'message', 'turn-card']);
    expect(messagesOf(log).some((m) => m.content.includes('partial answer'))).toBe(true);
    expect(f.provider.calls('slow-model')).toBe(1);
  });

  it('O3 a caller-side abort signal cancels the call in flight and ends the work Aborted', async () => {
    f.provider.script('slow-model', [{ kind: 'stream', chunks: ['partial answer'], end: 'hang' }]);
    await f.submit('o3b', { route: [{ provider: 'scripted', model: 'slow-model' }] });
    const controller = new AbortController();
    const result = await f
      .worker({ gateway: onFirstChunk(f.gateway, () => controller.abort()) })
      .process('o3b', { signal: controller.signal });
    expect(result).toMatchObject({ kind: 'ended', status: 'aborted' });
    expect((await f.units.messages(['o3b'])).at(-1)?.content).toContain('partial answer');
  });

  it('O3 an abort requested while the unit waits in the queue ends it Aborted without any call', async () => {
    await f.submit('o3c');
    expect(await f.units.requestAbort('o3c', 'changed my mind', 'abort-o3c')).toMatchObject({ ok: true });
    expect(await f.worker().process('o3c')).toMatchObject({
      kind: 'ended',
      status: 'aborted',
      error: 'changed my mind',
    });
    expect(f.provider.calls()).toBe(0);
    expect(f.budget.admits).toHaveLength(0);
  });

  it('O4 the log is header, message, receipt, message, turn-card, and a replay from a fresh connection gives the same receipts and messages', async () => {
    await f.submit('o4');
    await f.worker().process('o4');
    const log = await f.units.sessionLog(['o4']);
    expect(log.map((e) => e.kind)).toEqual(['header', 'message', 'receipt', 'message', 'turn-card']);

    const restarted = await f.reopen();
    try {
      expect(await restarted.units.sessionLog(['o4'])).toEqual(log);
      expect(await restarted.units.receipt('o4')).toEqual(await f.units.receipt('o4'));
      expect(await restarted.units.messages(['o4'])).toEqual(messagesOf(log));
    } finally {
      await restarted.close();
    }
  });

  it('O7 a denied admission makes no dispatch and fails the work with the authority reason', async () => {
    f.budget.denyReason = 'grant exhausted: max_invocations 1 reached';
    await f.submit('o7');
    const result = await f.worker().process('o7');
    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(result.kind === 'ended' && result.error).toContain('grant exhausted: max_invocations 1 reached');
    expect(f.provider.calls()).toBe(0);
    expect((await f.units.receipt('o7'))?.attempts).toHaveLength(0);
  });

  it('O7 admission names the provider as server_id and the model as tool_name, and holds the worst case', async () => {
    await f.submit('o7a', { messages: [{ role: 'user', content: 'x'.repeat(400) }], limits: { max_tokens: 1000 } });
    await f.worker().process('o7a');
    expect(f.budget.admits[0]).toMatchObject({
      server_id: 'scripted',
      tool_name: 'ok-model',
      token: 'capability-token',
    });
    // The prompt's byte bound (ADR 0042): 4 bytes of role + 400 of content + 8 framing + 8 reply
    // priming = 420 prompt tokens × 1 unit, + 1000 max tokens × 2 units.
    expect(f.budget.admits[0]?.requested_cost_units).toBe(2420n);
    expect(f.budget.admits[0]?.requested_tokens).toBe(420 + 1000);
  });

  it('O7 a prompt no hold can bound on its model (an image, configured without images) fails invalid_work, never admitted or dispatched', async () => {
    const image = { type: 'image', url: 'https://example.test/cat.png' };
    await f.submit('o7img', {
      messages: [{ role: 'user', content: 'look', parts: [{ type: 'text', text: 'look' }, image] }],
    });
    const prompts = { profileOf: () => ({ kind: 'openai' as const, accepts_images: false }) };
    const result = await f.worker({ prompts }).process('o7img');
    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(result.kind === 'ended' && result.error).toContain('messages[0].content[1]');
    expect(result.kind === 'ended' && result.state.failure?.code).toBe('invalid_work');
    expect(f.budget.admits).toHaveLength(0);
    expect(f.provider.calls()).toBe(0);
  });

  it('O7 a model without a price is refused and never dispatched or admitted', async () => {
    await f.submit('o7b', { route: [{ provider: 'scripted', model: 'free-model' }] });
    const result = await f.worker().process('o7b');
    expect(result).toMatchObject({ kind: 'ended', status: 'failed' });
    expect(result.kind === 'ended' && result.error).toContain('has no price');
    expect(f.provider.calls()).toBe(0);
    expect(f.budget.admits).toHaveLength(0);
  });
});
