// Proves that a made call's outcome outlives a stream that refuses writes for a while (as
// during a stream leader election, issue 9): the worker re-sends it within recordRetryMs,
// so the provider is called once and the attempt is settled with its real outcome. Without
// the re-send the worker gives up, and a redelivery would settle the attempt unknown and
// call again. The refusal is the real server's: the stream's message limit is lowered to
// what it holds (discard new), then raised again.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { AttemptSettled, AttemptStarted } from '@tally/orchestrator-domain';
import { workFixture, type WorkFixture } from './work.fixture.js';

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Issue 9: a paid call outlives a stream that refuses writes', () => {
  let f: WorkFixture;
  beforeEach(async () => {
    f = await workFixture('orchrec');
  });
  afterEach(async () => {
    f.provider.releaseResponses();
    await setWritable(f, true).catch(() => undefined);
    await f.dispose();
  });

  /** Lowers the stream's message limit to what it holds (every write refused), or lifts it. */
  async function setWritable(fixture: WorkFixture, writable: boolean): Promise<void> {
    const info = await fixture.jsm.streams.info(fixture.names.workEventsStream);
    await fixture.jsm.streams.update(fixture.names.workEventsStream, {
      ...info.config,
      max_msgs: writable ? -1 : info.state.messages,
    });
  }

  /** Starts the unit's dispatch, holds the provider's reply, and refuses writes once the attempt has started. */
  async function callWhileRefused(workId: string, recordRetryMs: number) {
    await f.submit(workId);
    f.provider.holdResponses();
    const processing = f.worker({ options: { recordRetryMs } }).process(workId);
    await until('the provider call', () => f.provider.inFlightNow === 1);
    await setWritable(f, false);
    f.provider.releaseResponses();
    return processing;
  }

  it('Issue 9: the outcome is re-sent until the stream takes it; the provider is called once', async () => {
    const processing = callWhileRefused('rec1', 20_000);
    // Refused for long enough that several re-sends fail, then writable again.
    await new Promise((r) => setTimeout(r, 1_500));
    await setWritable(f, true);
    expect(await processing).toMatchObject({ kind: 'ended', status: 'completed' });
    expect(f.provider.calls('ok-model')).toBe(1);
    const { events } = await f.repository.load('rec1');
    expect(events.filter((e): e is AttemptStarted => e.type === 'AttemptStarted')).toHaveLength(1);
    const settled = events.filter((e): e is AttemptSettled => e.type === 'AttemptSettled');
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ settlement: 'ok', output: 'ok' });
  });

  it('Issue 9: without re-sends the worker gives up on the outcome at once (what the re-send prevents)', async () => {
    const processing = callWhileRefused('rec2', 0);
    await expect(processing).rejects.toThrow();
    await setWritable(f, true);
    const { events } = await f.repository.load('rec2');
    expect(events.filter((e) => e.type === 'AttemptSettled')).toHaveLength(0);
  });
});
