// Property tests over random failure sequences: no dispatch is ever decided beyond the
// ceiling, no ordinal runs twice, every unit ends, and a fold of the stored events
// rebuilds exactly the state the worker evolved.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  FAILURE_DOMAINS,
  SETTLEMENTS,
  decide,
  foldWorkEvents,
  receiptOf,
  sessionLogOf,
  type AttemptOutcome,
  type WorkUnitState,
} from '../src/index.js';
import { PRICE, at, run, simulateWith, submit } from './fixtures.js';

const outcomeArb: fc.Arbitrary<AttemptOutcome | undefined> = fc.option(
  fc.record(
    {
      domain: fc.constantFrom(...FAILURE_DOMAINS),
      settlement: fc.constantFrom(...SETTLEMENTS),
      latency_ms: fc.nat(10_000),
      error: fc.constantFrom('reset', '429', 'overloaded', 'bad request'),
      http_status: fc.constantFrom(400, 401, 403, 429, 500, 503, 529),
      retry_after_ms: fc.nat(120_000),
      usage: fc.record({ input_tokens: fc.nat(10_000), output_tokens: fc.nat(10_000) }),
      output: fc.string({ maxLength: 8 }),
      partial_output: fc.string({ maxLength: 8 }),
    },
    { requiredKeys: ['domain', 'settlement', 'latency_ms'] },
  ),
  // undefined: the worker dies mid-dispatch and the attempt is found open on redelivery.
  { freq: 6 },
);

const unitArb = fc.record({
  limits: fc.record(
    {
      max_retries: fc.nat(3),
      run_retry_attempts: fc.nat(2),
      dispatch_ceiling: fc.integer({ min: 1, max: 12 }),
      retry_base_backoff_ms: fc.nat(1000),
    },
    { requiredKeys: ['max_retries', 'run_retry_attempts'] },
  ),
  route: fc.array(fc.record({ provider: fc.constantFrom('a', 'b'), model: fc.constantFrom('m1', 'm2') }), {
    minLength: 1,
    maxLength: 3,
  }),
  outcomes: fc.array(outcomeArb, { minLength: 1, maxLength: 60 }),
  jitters: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 20 }),
});

describe('work unit properties', () => {
  it('O2/O6 no dispatch beyond the ceiling can be decided, ordinals are dense and never repeat, and every unit ends', () => {
    fc.assert(
      fc.property(unitArb, ({ limits, route, outcomes, jitters }) => {
        const start = run({ status: 'absent', attempts: [] }, submit({ limits, route })).state;
        const ceiling = start.work?.limits.dispatch_ceiling ?? 0;
        let dispatched = 0;
        let j = 0;
        const probe = (state: WorkUnitState) => {
          // At every point, only the next ordinal below the ceiling can ever be started.
          for (let ordinal = 0; ordinal <= state.attempts.length + 1; ordinal++) {
            const decision = decide(
              {
                type: 'StartAttempt',
                command_id: 'probe',
                at: at(1),
                ordinal,
                jitter: 0,
                hold_id: 'p',
                hold_cost_units: 1n,
                price: PRICE,
              },
              state,
            );
            if (decision.ok) expect(ordinal === state.attempts.length && ordinal < ceiling).toBe(true);
          }
        };
        const { events, state } = simulateWith(
          start,
          (n) => {
            dispatched++;
            return outcomes[n % outcomes.length];
          },
          () => jitters[j++ % jitters.length] ?? 0,
          probe,
        );
        expect(dispatched).toBeLessThanOrEqual(ceiling);
        expect(['completed', 'failed', 'aborted']).toContain(state.status);
        const started = events.flatMap((e) => (e.type === 'AttemptStarted' ? [e.ordinal] : []));
        expect(started).toEqual(started.map((_, i) => i));
        expect(state.attempts.every((a) => a.settled && a.hold)).toBe(true);
        if (state.status === 'completed')
          expect(state.attempts[state.completion?.winning_attempt ?? -1]?.settled?.output).toBeDefined();
        if (state.failure?.code === 'dispatch_ceiling')
          expect(state.failure.error).toContain(`dispatch ceiling of ${ceiling}`);
      }),
      { numRuns: 300 },
    );
  });

  it('O4 fold(events) after a JSON round trip rebuilds the same state, receipt and session log', () => {
    fc.assert(
      fc.property(unitArb, ({ limits, route, outcomes, jitters }) => {
        const submitted = run({ status: 'absent', attempts: [] }, submit({ limits, route }));
        let j = 0;
        const { events, state } = simulateWith(
          submitted.state,
          (n) => outcomes[n % outcomes.length],
          () => jitters[j++ % jitters.length] ?? 0,
          () => undefined,
        );
        const stored = JSON.parse(JSON.stringify([...submitted.events, ...events]));
        const rebuilt = foldWorkEvents(stored);
        expect(rebuilt).toEqual(state);
        expect(receiptOf(rebuilt)).toEqual(receiptOf(state));
        expect(sessionLogOf([rebuilt])).toEqual(sessionLogOf([state]));
      }),
      { numRuns: 200 },
    );
  });
});
