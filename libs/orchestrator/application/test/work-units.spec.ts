// Proves that submit and requestAbort return the stream sequence of their own append (a
// re-sent submission returns the unit's sequence unchanged), which the API waits for so a
// read after the answer sees the write (read-your-writes).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { countUnitReads, TOKEN, workFixture, type WorkFixture } from './work.fixture.js';

const input = (workId: string) => ({
  work_id: workId,
  session_id: 's',
  purpose: 'execute' as const,
  token: TOKEN,
  route: [{ provider: 'scripted', model: 'ok-model' }],
  messages: [{ role: 'user', content: 'hi' }],
});

describe('work-unit commands return their sequence', () => {
  let f: WorkFixture;
  beforeEach(async () => {
    f = await workFixture('wus');
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('submit returns the sequence of WorkSubmitted; a re-sent submission returns the same; requestAbort returns its own', async () => {
    const first = await f.units.submit(input('u1'));
    const other = await f.units.submit(input('u2'));
    expect(first.ok && other.ok).toBe(true);
    if (!first.ok || !other.ok) return;
    expect(first.sequence).toBe((await f.repository.load('u1')).lastSequence);
    expect(other.sequence).toBeGreaterThan(first.sequence);
    expect(await f.units.submit(input('u1'))).toEqual(first);
    const abort = await f.units.requestAbort('u1', 'stop', 'u1:abort');
    expect(abort).toEqual({ ok: true, sequence: (await f.repository.load('u1')).lastSequence });
    expect(abort.ok && abort.sequence).toBeGreaterThan(other.sequence);
  });

  it('a new submission appends without reading the unit first; a re-sent one with other content under the same id is still refused, inside the duplicate window too', async () => {
    const reads = await countUnitReads(f);
    const first = await f.units.submit(input('fresh'));
    expect(first.ok).toBe(true);
    expect(await reads.stop()).toBe(0);

    // Same work id, other messages: the stream drops the commit as a duplicate, and the unit is read to refuse it.
    const changed = await f.units.submit({
      ...input('fresh'),
      messages: [{ role: 'user', content: 'something else' }],
    });
    expect(changed).toMatchObject({ ok: false, rejection: { code: 'already_submitted' } });
    expect((await f.repository.load('fresh')).events.map((e) => e.type)).toEqual(['WorkSubmitted']);
  });
});
