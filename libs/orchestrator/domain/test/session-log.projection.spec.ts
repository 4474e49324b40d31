// Proves the session log's order (header, prompt, receipt, reply, turn card) and that the
// model-visible projection never includes receipts, keeps partial output, and is a pure
// function of the events.
import { describe, expect, it } from '@jest/globals';
import { foldWorkEvents, messagesOf, receiptOf, sessionLogOf, type AttemptOutcome } from '../src/index.js';
import { run, simulate, submit } from './fixtures.js';

const ok: AttemptOutcome = {
  domain: 'unknown',
  settlement: 'ok',
  latency_ms: 7,
  output: 'done',
  usage: { input_tokens: 5, output_tokens: 3 },
};

function unitEvents(outcomes: AttemptOutcome[], overrides = {}) {
  const submitted = run({ status: 'absent', attempts: [] }, submit(overrides));
  return [
    ...submitted.events,
    ...simulate(
      submitted.state,
      (n) => outcomes[n],
      () => 0,
    ),
  ];
}

describe('session log projection', () => {
  it('O4 the receipt sits between the prompt and its reply, and a turn card closes the turn', () => {
    const entries = sessionLogOf([foldWorkEvents(unitEvents([ok]))]);
    expect(entries.map((e) => e.kind)).toEqual(['header', 'message', 'receipt', 'message', 'turn-card']);
    expect(messagesOf(entries)).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'done' },
    ]);
  });

  it('O4 a replay of the same events gives the same receipts and messages', () => {
    const events = unitEvents([{ domain: 'network', settlement: 'unknown', latency_ms: 1, error: 'reset' }, ok]);
    const replayed = JSON.parse(JSON.stringify(events));
    const live = foldWorkEvents(events);
    const again = foldWorkEvents(replayed);
    expect(receiptOf(again)).toEqual(receiptOf(live));
    expect(sessionLogOf([again])).toEqual(sessionLogOf([live]));
  });

  it('O3 partial output of an aborted unit stays in the log and the projection', () => {
    const aborted: AttemptOutcome = {
      domain: 'unknown',
      settlement: 'cancelled',
      latency_ms: 1,
      error: 'aborted',
      partial_output: 'partial answer',
    };
    const entries = sessionLogOf([foldWorkEvents(unitEvents([aborted]))]);
    expect(entries.map((e) => e.kind)).toEqual(['header', 'message', 'receipt', 'message', 'turn-card']);
    expect(messagesOf(entries).some((m) => m.content.includes('partial answer'))).toBe(true);
  });

  it('a failed unit logs prompt, receipt and turn card, with no reply', () => {
    const events = unitEvents([{ domain: 'request', settlement: 'failed', latency_ms: 1, error: 'bad request' }]);
    const entries = sessionLogOf([foldWorkEvents(events)]);
    expect(entries.map((e) => e.kind)).toEqual(['header', 'message', 'receipt', 'turn-card']);
    expect(messagesOf(entries)).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('units of one session follow their submission order under one header', () => {
    const second = foldWorkEvents(
      unitEvents([ok], { work_id: 'w2', command_id: 'w2:submit', at: '2026-01-01T00:01:00.000Z' }),
    );
    const first = foldWorkEvents(unitEvents([ok]));
    const entries = sessionLogOf([second, first]);
    expect(entries.filter((e) => e.kind === 'header')).toHaveLength(1);
    expect(entries.filter((e) => e.kind === 'turn-card').map((e) => e.work_id)).toEqual(['w1', 'w2']);
  });
});
