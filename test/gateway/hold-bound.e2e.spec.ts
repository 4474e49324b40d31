// Proves ADR 0042 against a real stack (real NATS, the real budget-authority and orchestrator processes, the scripted provider over HTTP): a CJK prompt that the old characters ÷ 4 estimate held at a quarter of its cost is refused before any provider call, on the drop-in endpoint and as work; a model's encoding holds English at its exact count; and an image for a model without images is a 400 naming the field.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MODELS, PRICE } from '../orchestrator/orchestrator.harness.js';
import { issueCapability, meteredHarness } from './gateway.support.js';

type Json = Record<string, unknown>;

/** Beside every scripted model: one counted with o200k_base (OpenAI kind only), and one configured without images. */
const h = meteredHarness('gwhold', {}, () => {
  const models = {
    ...Object.fromEntries(MODELS.map((m) => [m, PRICE])),
    'text-only': { ...PRICE, accepts_images: false },
  };
  const provider = { base_url: h.provider().url, api_key_env: 'SCRIPTED_API_KEY' };
  return {
    providers: [
      {
        name: 'scripted',
        kind: 'openai',
        ...provider,
        models: { ...models, 'counted-model': { ...PRICE, encoding: 'o200k_base' } },
      },
      { name: 'scripted-anthropic', kind: 'anthropic', ...provider, models },
    ],
  };
});

beforeAll(async () => {
  await h.startAuthority();
  await h.start(1);
}, 240_000);
afterAll(() => h.dispose(), 60_000);

/** 1,200 characters of Chinese text: 3,600 UTF-8 bytes, more than 1,000 tokens in every OpenAI encoding. */
const CJK = Array.from({ length: 1_200 }, (_, k) => String.fromCodePoint(0x4e00 + ((k * 7_919) % 20_902))).join('');
/** At 1 unit per prompt token (PRICE), a grant of 1,000 units. */
const GRANT = { max_total_cost_units: 1_000 };

async function chat(token: string, body: Json): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

describe('ADR 0042 the hold bounds the prompt by its bytes', () => {
  it('O7 B19 a 1,200-character CJK prompt on a 1,000-unit grant is a 402 on the drop-in endpoint before any provider call', async () => {
    const cap = await issueCapability(h, [
      { server_id: 'scripted', tool_name: 'ok-model', ...GRANT },
      { server_id: 'scripted', tool_name: 'counted-model', ...GRANT },
    ]);
    const before = h.provider().requests.length;
    // 16 output tokens: the old estimate (1,200 / 4 + 4 prompt tokens + 32 units of output) fitted the grant.
    for (const model of ['scripted/ok-model', 'scripted/counted-model']) {
      const refused = await chat(cap.token, { model, max_tokens: 16, messages: [{ role: 'user', content: CJK }] });
      expect({ model, status: refused.status }).toEqual({ model, status: 402 });
      expect((refused.body['error'] as Json)['code']).toBe('budget_exhausted');
    }
    expect(h.provider().requests.length).toBe(before);
  });

  it('O7 B19 the same prompt as work fails with the authority reason, and the scripted provider sees no request', async () => {
    const cap = await issueCapability(h, [{ server_id: 'scripted', tool_name: 'ok-model', ...GRANT }]);
    const before = h.provider().requests.length;
    const workId = `hold-${Date.now().toString(36)}`;
    const submitted = await h.post('/v1/work', {
      work_id: workId,
      token: cap.token,
      purpose: 'execute',
      route: [{ provider: 'scripted', model: 'ok-model' }],
      messages: [{ role: 'user', content: CJK }],
      limits: { max_tokens: 16, timeout_ms: 10_000 },
    });
    expect(submitted.status).toBe(202);
    const status = await h.terminal(workId);
    expect(status['status']).toBe('failed');
    expect(status['error']).toContain('admission denied by the budget authority: budget exhausted');
    expect(h.provider().requests.length).toBe(before);
  });

  it('O7 a model with an encoding holds English at its exact count plus framing: it fits a grant the byte bound does not', async () => {
    const cap = await issueCapability(h, [
      { server_id: 'scripted', tool_name: 'ok-model', ...GRANT },
      { server_id: 'scripted', tool_name: 'counted-model', ...GRANT },
    ]);
    // About 2,000 bytes and some 400 tokens: the byte bound holds more than the grant, the exact count far less.
    const english = 'The quarterly budget review covers travel, tooling and model spend. '.repeat(30);
    const body = { max_tokens: 16, messages: [{ role: 'user', content: english }] };
    const before = h.calls('counted-model');
    expect((await chat(cap.token, { ...body, model: 'scripted/ok-model' })).status).toBe(402);
    const allowed = await chat(cap.token, { ...body, model: 'scripted/counted-model' });
    expect(allowed.status).toBe(200);
    expect(h.calls('counted-model')).toBe(before + 1);
  });

  it('O7 an image for a model configured without images is a 400 naming the field, and nothing is submitted or called', async () => {
    const cap = await issueCapability(h, [{ server_id: 'scripted', tool_name: 'text-only', ...GRANT }]);
    const before = h.provider().requests.length;
    const content = [
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: 'https://example.test/cat.png' } },
    ];
    const refused = await chat(cap.token, { model: 'scripted/text-only', messages: [{ role: 'user', content }] });
    expect(refused.status).toBe(400);
    expect(refused.body['error']).toMatchObject({ type: 'invalid_request_error', param: 'messages[0].content[1]' });
    expect(h.provider().requests.length).toBe(before);
  });
});
