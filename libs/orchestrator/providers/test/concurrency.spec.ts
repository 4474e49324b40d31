// Proves one process can hold 1,000 dispatches in flight at once: no hidden connection cap serialises them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScriptedProvider } from '@tally/testing';
import type { ProviderRegistry } from '../src/index.js';
import { noAbort, registryFor, request } from './gateway.fixture.js';

const IN_FLIGHT = 1_000;
const LATENCY_MS = 500;

let server: ScriptedProvider;
beforeAll(async () => {
  server = await ScriptedProvider.start();
  server.setDefault({ kind: 'stream', chunks: ['ok'], latencyMs: LATENCY_MS });
});
afterAll(async () => {
  await server.stop();
});

function dispatchAll(registry: ProviderRegistry, model: string) {
  return Promise.all(Array.from({ length: IN_FLIGHT }, () => registry.dispatch(request(model, { timeout_ms: 60_000 }), noAbort())));
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

// Both kinds share one transport, so each test uses one kind and together they cover both.
describe('concurrency', () => {
  it(`O6 ${IN_FLIGHT} dispatches are open at the provider at the same time (no connection cap)`, async () => {
    const kind = 'openai';
    const registry = registryFor(server, kind);
    const model = `${kind}-gate`;
    // The server holds every response, so the in-flight count can only reach 1,000 if the
    // client really opened 1,000 concurrent requests; machine load only makes it slower.
    server.holdResponses();
    const outcomes = dispatchAll(registry, model);
    await waitUntil(() => server.inFlightNow >= IN_FLIGHT, 45_000);
    const heldAtOnce = server.inFlightNow;
    server.releaseResponses();
    const okCount = (await outcomes).filter((o) => o.kind === 'ok').length;
    registry.close();
    expect(heldAtOnce).toBe(IN_FLIGHT);
    expect(okCount).toBe(IN_FLIGHT);
  });

  it(`O6 ${IN_FLIGHT} concurrent dispatches against ${LATENCY_MS} ms latency finish in well under 10 × ${LATENCY_MS} ms`, async () => {
    const kind = 'anthropic';
    const registry = registryFor(server, kind);
    const model = `${kind}-bench`;
    // The first round opens 1,000 connections, whose cost depends on the machine's load, so it
    // only has to succeed; the second measures the pooled steady state a worker runs in.
    let cold, warm, elapsedMs;
    try {
      cold = await dispatchAll(registry, model);
      const started = performance.now();
      warm = await dispatchAll(registry, model);
      elapsedMs = performance.now() - started;
    } finally {
      registry.close();
    }
    expect(cold.every((o) => o.kind === 'ok')).toBe(true);
    expect(warm.every((o) => o.kind === 'ok')).toBe(true);
    expect(server.calls(model)).toBe(2 * IN_FLIGHT);
    // A cap of N connections would take ⌈1000/N⌉ × 500 ms; this bound catches any cap below ~100.
    expect(elapsedMs).toBeLessThan(10 * LATENCY_MS);
  });
});
