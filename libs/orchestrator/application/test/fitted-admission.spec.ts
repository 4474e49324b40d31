// Proves that a fitted hold still works on top of the prompt's bound (ADR 0042): fitting lowers max_tokens, never the prompt bound, and a hold that cannot cover the whole prompt plus the fewest output tokens is not asked for.
import { describe, expect, it } from '@jest/globals';
import { FIT_MIN_OUTPUT_TOKENS, fittedRequest, maxTokensFor } from '@tally/orchestrator-application';
import { promptTokenBound } from '@tally/orchestrator-domain';

const PRICE = { input_per_mtok_units: 1_000_000, output_per_mtok_units: 2_000_000, currency: 'USD' };
const BASE = {
  command_id: 'w:attempt:0:admit',
  request_id: 'w:attempt:0',
  token: 't',
  server_id: 'scripted',
  tool_name: 'ok-model',
  parameters_hash: '0'.repeat(64),
  context: { kind: 'work_unit', work_id: 'w', session_id: 's', purpose: 'execute', ordinal: 0 },
} as const;

const cjk = promptTokenBound([{ role: 'user', content: '预算'.repeat(600) }], undefined);
const promptTokens = cjk.ok ? cjk.tokens : 0;

describe('a fitted hold on top of the prompt bound', () => {
  it('O7 B19 the request holds the whole prompt bound at max_tokens, and the smallest usable hold holds it whole too', () => {
    expect(promptTokens).toBe(3_620);
    const request = fittedRequest(BASE, PRICE, promptTokens, 1_000);
    expect(request.requested_cost_units).toBe(3_620n + 2_000n);
    expect(request.requested_tokens).toBe(3_620 + 1_000);
    expect(request.min_cost_units).toBe(3_620n + 2n * BigInt(FIT_MIN_OUTPUT_TOKENS));
  });

  it('O7 B19 a hold fitted below the request lowers max_tokens to what is left after the whole prompt bound', () => {
    expect(maxTokensFor(PRICE, promptTokens, 3_620n + 200n, 1_000)).toBe(100);
    expect(maxTokensFor(PRICE, promptTokens, 3_620n + 2_000n, 1_000)).toBe(1_000);
  });

  it('O7 B19 a hold that does not cover the prompt bound leaves no output tokens: the prompt is never shrunk to fit', () => {
    expect(maxTokensFor(PRICE, promptTokens, 3_619n, 1_000)).toBe(0);
  });
});
