// Gateway suite (issue 10): what the drop-in endpoint adds to a call, metered by the real
// budget-authority with exact budgets, beside direct calls to the same zero-latency
// scripted provider measured interleaved in the same run.
//
// latency: POST /v1/chat/completions through the official wire format, non-streaming
//   (request → whole reply) and streaming (request → first content chunk, time to first
//   token), at 1 and 64 concurrent clients; each gateway call is paired with a direct call
//   made by the same client right after, and the row is the distribution of the differences.
// saturation: 128 clients spread over two orchestrator replicas, calls/s over a fixed
//   window, and calls/s per vCPU beside LiteLLM's published figure (3,000 RPS with budgets
//   on 33 pods of 4 vCPU, about 23 calls/s per vCPU). Every process of the run (NATS, the
//   authority, both orchestrators, the provider and the load generator) shares this host's
//   cores, so the per-vCPU figure divides by all of them.
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { percentile, type BenchContext, type BenchRow, type BenchSuite } from './lib.js';
import { stack, type Stack } from './orchestrator.bench.js';

const SUITE = 'gateway';
const MODEL = 'scripted/bench-model';
const LITELLM_CALLS_PER_VCPU = 3_000 / (33 * 4);
/** The scripted provider's only chunk: its arrival marks the first token on either path. */
const MARKER = '"content":"ok"';

function chatBody(stream: boolean): string {
  return JSON.stringify({
    model: MODEL,
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

/** Milliseconds to the first content chunk (streaming) or to the whole body; the body is always drained. */
async function timedCall(url: string, key: string, stream: boolean): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: chatBody(stream),
  });
  if (res.status !== 200) throw new Error(`${url} → ${res.status} ${await res.text()}`);
  if (!stream) {
    await res.arrayBuffer();
    return performance.now() - started;
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  let first: number | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (first === undefined) {
      seen += decoder.decode(value, { stream: true });
      if (seen.includes(MARKER)) first = performance.now() - started;
    }
  }
  if (first === undefined) throw new Error(`${url} streamed no content chunk`);
  return first;
}

interface Paths {
  gateway(): Promise<number>;
  direct(): Promise<number>;
}

function pathsOf(s: Stack, orchestratorUrl: string, stream: boolean): Paths {
  return {
    gateway: () => timedCall(`${orchestratorUrl}/v1/chat/completions`, s.token, stream),
    direct: () => timedCall(`${s.provider.url}/chat/completions`, 'bench-key', stream),
  };
}

/** `clients` loops, each making a gateway call then a direct one, until `calls` pairs are done. */
async function pairedLatency(paths: Paths, clients: number, calls: number): Promise<{ added: number[] }> {
  const added: number[] = [];
  let left = calls;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (left-- > 0) {
        const through = await paths.gateway();
        const direct = await paths.direct();
        added.push(through - direct);
      }
    }),
  );
  return { added: added.sort((a, b) => a - b) };
}

async function latencyRows(ctx: BenchContext, s: Stack, url: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const stream of [false, true]) {
    const paths = pathsOf(s, url, stream);
    await pairedLatency(paths, 4, 40); // warm both paths: connections, caches, JIT
    for (const clients of [1, 64]) {
      const calls = Math.max(clients * 2, Math.round((clients === 1 ? 300 : 1_280) * ctx.scale));
      ctx.log(`gateway: ${stream ? 'time to first token' : 'non-streaming'}, ${clients} client(s), ${calls} calls`);
      const { added } = await pairedLatency(paths, clients, calls);
      const what = stream ? 'gateway-added time to first token' : 'gateway-added latency, non-streaming';
      const note = `${calls} metered calls, ${clients} client(s); minus a direct call by the same client`;
      rows.push(
        { suite: SUITE, case: `${what}, ${clients} client(s)`, metric: 'p50 ms', value: percentile(added, 50), note },
        {
          suite: SUITE,
          case: `${what}, ${clients} client(s)`,
          metric: 'p99 ms',
          value: percentile(added, 99),
          ...(stream ? { note: 'goal: p50 <= 10 ms' } : {}),
        },
      );
    }
  }
  return rows;
}

/** Calls/s through `urls` (round robin per client) over `windowMs` after a warm-up. */
async function saturation(s: Stack, urls: string[], clients: number, windowMs: number): Promise<number> {
  let counting = false;
  let counted = 0;
  let stop = false;
  const loops = Array.from({ length: clients }, async (_, i) => {
    const url = `${urls[i % urls.length]}/v1/chat/completions`;
    while (!stop) {
      await timedCall(url, s.token, false);
      if (counting) counted++;
    }
  });
  await new Promise((r) => setTimeout(r, Math.min(3_000, windowMs / 3)));
  counting = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, windowMs));
  counting = false;
  const elapsed = performance.now() - started;
  stop = true;
  await Promise.all(loops);
  return (counted / elapsed) * 1000;
}

export const gatewaySuite: BenchSuite = {
  name: SUITE,
  async run(ctx) {
    const s = await stack(ctx, 'bgw', true);
    try {
      s.provider.always('bench-model', {
        kind: 'stream',
        chunks: ['ok'],
        usage: { input_tokens: 1, output_tokens: 1 },
      });
      const first = await s.startOrchestrator();
      const rows = await latencyRows(ctx, s, first.url);
      const second = await s.startOrchestrator();
      const windowMs = Math.max(3_000, Math.round(15_000 * ctx.scale));
      ctx.log(`gateway: saturation, 128 clients over two replicas, ${windowMs} ms`);
      const callsPerS = await saturation(s, [first.url, second.url], 128, windowMs);
      const cores = availableParallelism();
      const perCore = callsPerS / cores;
      rows.push(
        {
          suite: SUITE,
          case: 'gateway calls at saturation, two orchestrator replicas',
          metric: 'calls/s',
          value: callsPerS,
          note: `metered, exact budgets, 128 clients, ${cores} cores shared by every process`,
        },
        {
          suite: SUITE,
          case: 'gateway calls per vCPU',
          metric: 'calls/s',
          value: perCore,
          baselineCase: 'LiteLLM published, per vCPU',
          note: 'goal: ratio >= 5',
        },
        {
          suite: SUITE,
          case: 'LiteLLM published, per vCPU',
          metric: 'calls/s',
          value: LITELLM_CALLS_PER_VCPU,
          note: '3,000 RPS on 33 pods × 4 vCPU, p50 30.6 / p99 91.6 ms (published, not measured here)',
        },
      );
      return rows;
    } finally {
      await s.dispose();
    }
  },
};
