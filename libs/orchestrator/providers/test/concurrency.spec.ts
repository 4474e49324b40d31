// Proves one process can hold 1,000 dispatches in flight at once: no hidden connection cap serialises them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScriptedProvider } from '@tally/testing';
import type { ProviderRegistry } from '../src/index.js';
import { noAbort, registryFor, request } from './gateway.fixture.js';

const IN_FLIGHT = 1_000;

let server: ScriptedProvider;
beforeAll(async () => {
  server = await ScriptedProvider.start();
  server.setDefault({ kind: 'stream', chunks: ['ok'] });
});
afterAll(async () => {
  await server.stop();
});

function dispatchAll(registry: ProviderRegistry, model: string) {
  return Promise.all(
    Array.from({ length: IN_FLIGHT }, () => registry.dispatch(request(model, { timeout_ms: 60_000 }), noAbort())),
  );
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

// Throughput is measured by the orchestrator benchmark, not asserted here; this proves only
// that nothing caps the number of requests open at once, for both provider kinds.
describe.each(['openai', 'anthropic'] as const)('concurrency (%s)', (kind) => {
  it(`O6 ${IN_FLIGHT} dispatches are open at the provider at the same time (no connection cap)`, async () => {
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
});
