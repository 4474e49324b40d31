// Measures the command round trip (client publish → PubAck → handler → reply cache →
// reply → ack) on the local nats-server: sequentially, and open-loop at half of the
// saturation rate, which is the operating point the Admit latency budget is set for.
// It is a measurement, so it runs only when asked (TALLY_LATENCY=1): on a shared CI box
// the numbers swing with other load. The bound asserted is then a loose smoke check;
// TALLY_LATENCY_STRICT=1 asserts the hot-path budget itself (p99 <= 10 ms).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { JetStreamCommandClient } from '../src/index.js';
import { Harness } from './fixtures.js';

const send = { timeoutMs: 5000, attemptsMax: 1 } as const;
const p99BoundMs = process.env['TALLY_LATENCY_STRICT'] === '1' ? 10 : 250;

function percentiles(samples: number[]): { p50: number; p99: number; max: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(3));
  return { p50: at(0.5), p99: at(0.99), max: at(1), n: sorted.length };
}

const measure = process.env['TALLY_LATENCY'] === '1' || process.env['TALLY_LATENCY_STRICT'] === '1' ? describe : describe.skip;

measure('durable commands: latency', () => {
  let h: Harness;
  let client: JetStreamCommandClient;
  let seq = 0;
  beforeAll(async () => {
    h = await Harness.create('lat');
    await h.startServer('a');
    client = await h.client();
  });
  afterAll(async () => h?.dispose());

  async function timed(command: 'ping' | 'append'): Promise<number> {
    const i = seq++;
    const payload = command === 'ping' ? {} : { account: `acct-${i % 500}`, amount: 1 };
    const started = performance.now();
    const answer = await client.send('work', command, `lat-${i}`, payload, send);
    const elapsed = performance.now() - started;
    if (!answer.ok) throw new Error(`command failed: ${JSON.stringify(answer.error)}`);
    return elapsed;
  }

  it('round trip of a trivial handler, sequential: p99 within the bound', async () => {
    for (let i = 0; i < 300; i++) await timed('ping');
    const samples: number[] = [];
    for (let i = 0; i < 2000; i++) samples.push(await timed('ping'));
    const stats = percentiles(samples);
    console.log(`trivial handler, sequential: ${JSON.stringify(stats)} ms`);
    expect(stats.p99).toBeLessThanOrEqual(p99BoundMs);
  });

  it('round trip of a trivial handler at half of the saturation rate: p99 within the bound', async () => {
    // Saturation: 64 callers in a closed loop for 2 s.
    const until = performance.now() + 2000;
    let done = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (performance.now() < until) {
          await timed('ping');
          done++;
        }
      }),
    );
    const saturationPerSec = done / 2;
    // Open loop at half that rate for 3 s: arrivals do not wait for replies.
    const ratePerSec = saturationPerSec / 2;
    const intervalMs = 1000 / ratePerSec;
    const samples: Promise<number>[] = [];
    const start = performance.now();
    for (let k = 0; performance.now() - start < 3000; k++) {
      const due = start + k * intervalMs;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      samples.push(timed('ping'));
    }
    const stats = percentiles(await Promise.all(samples));
    console.log(`trivial handler at half saturation (${Math.round(ratePerSec)}/s of ${Math.round(saturationPerSec)}/s): ${JSON.stringify(stats)} ms`);
    expect(stats.p99).toBeLessThanOrEqual(p99BoundMs);
  });

  it('round trip of a handler that appends one event, sequential: p99 within the bound', async () => {
    const samples: number[] = [];
    for (let i = 0; i < 1000; i++) samples.push(await timed('append'));
    const stats = percentiles(samples);
    console.log(`append handler, sequential: ${JSON.stringify(stats)} ms`);
    expect(stats.p99).toBeLessThanOrEqual(p99BoundMs * 1.5);
  });
});
