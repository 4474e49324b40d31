// Proves that a nats-server restart (crash and clean stop) in the middle of a stream of
// appends loses nothing and duplicates nothing, when writers resolve unknown outcomes by
// republishing the same event ids.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppendOutcomeUnknown, ConcurrencyConflict } from '@tally/eventing';
import { PrivateNatsServer, uniqueNamespace } from '@tally/testing';
import { appendWithRedelivery } from '../src/append-with-redelivery.js';
import { counterEvent, eventually, sleep, storeFixture, type StoreFixture } from './fixtures.js';

const AGGREGATES = 10;
const EVENTS_PER_AGGREGATE = 50;
const TOTAL = AGGREGATES * EVENTS_PER_AGGREGATE;

describe('event store across nats-server restarts', () => {
  let server: PrivateNatsServer;
  let f: StoreFixture;
  beforeAll(async () => {
    server = await PrivateNatsServer.start();
    f = await storeFixture(server.url, uniqueNamespace('rs'));
  });
  afterAll(async () => {
    await f?.dispose();
    await server?.dispose();
  });

  let acked = 0;
  let unknowns = 0;

  /** Reads the subject's last sequence, waiting out the restart window. */
  async function lastSequence(subject: string): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        return await f.store.lastSequence(subject);
      } catch {
        await sleep(100);
      }
    }
    throw new Error(`could not read ${subject}`);
  }

  /** The plain recipe: on an unknown outcome or a conflict, reload and republish the same event id. */
  async function reloadAndRepublish(
    subject: string,
    event: ReturnType<typeof counterEvent>,
    expected: number,
  ): Promise<number> {
    let expectedSequence = expected;
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        return (await f.store.append(subject, [event], expectedSequence)).lastSequence;
      } catch (error) {
        if (!(error instanceof AppendOutcomeUnknown) && !(error instanceof ConcurrencyConflict)) throw error;
        if (error instanceof AppendOutcomeUnknown) unknowns++;
        await sleep(50);
        expectedSequence = await lastSequence(subject);
      }
    }
    throw new Error(`gave up appending ${event.eventId}`);
  }

  /** The library helper: republishes the same events with the same expected sequence. */
  async function withHelper(
    subject: string,
    event: ReturnType<typeof counterEvent>,
    expected: number,
  ): Promise<number> {
    for (let round = 0; round < 10; round++) {
      try {
        return (
          await appendWithRedelivery(f.store, subject, [event], expected, {
            attemptsMax: 20,
            retryDelayMs: 50,
            retryDelayMaxMs: 1000,
          })
        ).lastSequence;
      } catch (error) {
        if (!(error instanceof AppendOutcomeUnknown)) throw error;
        unknowns++;
      }
    }
    throw new Error(`gave up appending ${event.eventId}`);
  }

  async function writer(aggregate: number): Promise<void> {
    const id = `agg-${aggregate}`;
    const subject = f.names.workEventSubject(id);
    let expected = 0;
    for (let i = 0; i < EVENTS_PER_AGGREGATE; i++) {
      const event = counterEvent(`${id}-e${i}`, id, i, 'w');
      expected =
        aggregate % 2 === 0
          ? await withHelper(subject, event, expected)
          : await reloadAndRepublish(subject, event, expected);
      acked++;
    }
  }

  it('a crash (SIGKILL) and a clean stop during 500 appends lose no acknowledged event and store none twice, in order per aggregate', async () => {
    const writers = Promise.all(Array.from({ length: AGGREGATES }, (_, a) => writer(a)));
    await eventually('a third of the events acked', () => acked >= TOTAL * 0.3, 30_000);
    await server.stop('SIGKILL');
    await sleep(300);
    await server.restart();
    await eventually('two thirds of the events acked', () => acked >= TOTAL * 0.7, 60_000);
    await server.stop('SIGTERM');
    await sleep(300);
    await server.restart();
    await writers;

    expect(acked).toBe(TOTAL);
    // The outage was real: some appends did not get an answer.
    expect(unknowns).toBeGreaterThan(0);
    const info = await f.jsm.streams.info(f.names.workEventsStream);
    expect(info.state.messages).toBe(TOTAL);
    for (let a = 0; a < AGGREGATES; a++) {
      const { events } = await f.store.load(f.names.workEventSubject(`agg-${a}`));
      expect(events.map((e) => e.event.eventId)).toEqual(
        Array.from({ length: EVENTS_PER_AGGREGATE }, (_, i) => `agg-${a}-e${i}`),
      );
    }
  }, 120_000);
});
