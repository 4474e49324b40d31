// Proves that the parameters hash the orchestrator's Admits carry (B13-B15) is the authority's own hash of
// `parameters` for the call it will make, and that it changes with every part of that call.
import { describe, expect, it } from '@jest/globals';
import { callParametersHash, type CallParameters } from '@tally/orchestrator-application';
import { parametersHash } from '../../apps/budget-authority/src/command-mapping.js';

const CALL: CallParameters = {
  provider: 'scripted',
  model: 'ok-model',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hello', parts: [{ kind: 'text', text: 'hello' }] },
  ],
  max_tokens: 64,
  options: { temperature: 0.2, tools: [{ name: 'lookup', parameters: { type: 'object' } }] },
};

describe('the parameters hash of a call', () => {
  it('B15 it is the SHA-256 hex the authority computes for the same call sent as parameters', () => {
    const hash = callParametersHash(CALL);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(parametersHash({ ...CALL }));
    // Key order is not part of the call: the canonical form sorts keys.
    expect(
      callParametersHash({
        options: CALL.options,
        max_tokens: 64,
        messages: CALL.messages,
        model: 'ok-model',
        provider: 'scripted',
      }),
    ).toBe(hash);
  });

  it.each<[string, Partial<CallParameters>]>([
    ['provider', { provider: 'scripted-anthropic' }],
    ['model', { model: 'fallback-model' }],
    ['messages', { messages: [{ role: 'user', content: 'hello!' }] }],
    ['max_tokens', { max_tokens: 65 }],
    ['options', { options: { temperature: 0.3 } }],
    ['options (left out)', { options: undefined }],
  ])('B15 a change of %s changes the hash, so a nonce bound to one call does not fit the other', (_part, change) => {
    expect(callParametersHash({ ...CALL, ...change })).not.toBe(callParametersHash(CALL));
  });
});
