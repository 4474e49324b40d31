// Proves O5's reusable pieces: bounded exponential backoff with jitter that honours Retry-After,
// Retry-After parsing, and a per-provider circuit breaker that trips only on network and parse failures.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScriptedProvider } from '@tally/testing';
import { backoffDelayMs, CircuitBreaker, parseRetryAfterMs, type DispatchOutcome } from '../src/index.js';
import { KINDS, noAbort, registryFor, request } from './gateway.fixture.js';

describe('backoffDelayMs', () => {
  const draws = [0, 0.001, 0.25, 0.5, 0.75, 0.999999];

  it('O5 grows exponentially and keeps equal jitter within [ceiling/2, ceiling]', () => {
    for (let attempt = 1; attempt <= 8; attempt++) {
      const ceiling = Math.min(10_000, 100 * 2 ** (attempt - 1));
      for (const jitter01 of draws) {
        const delay = backoffDelayMs({ attempt, baseMs: 100, maxMs: 10_000, jitter01 });
        expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
    expect(backoffDelayMs({ attempt: 3, baseMs: 100, maxMs: 10_000, jitter01: 0.999999 })).toBe(400);
  });

  it('O5 full jitter draws from [0, ceiling]', () => {
    expect(backoffDelayMs({ attempt: 4, baseMs: 100, maxMs: 10_000, jitter01: 0, jitter: 'full' })).toBe(0);
    expect(backoffDelayMs({ attempt: 4, baseMs: 100, maxMs: 10_000, jitter01: 0.5, jitter: 'full' })).toBe(400);
  });

  it('O5 never exceeds maxMs, however many attempts', () => {
    for (const attempt of [10, 60, 1_000, 1_000_000]) {
      expect(backoffDelayMs({ attempt, baseMs: 250, maxMs: 30_000, jitter01: 0.999 })).toBeLessThanOrEqual(30_000);
    }
  });

  it('O5 honours retry-after when it is longer than the backoff, capped at maxMs', () => {
    expect(backoffDelayMs({ attempt: 1, baseMs: 100, maxMs: 30_000, jitter01: 0.5, retryAfterMs: 7_000 })).toBe(7_000);
    expect(backoffDelayMs({ attempt: 1, baseMs: 100, maxMs: 30_000, jitter01: 0.5, retryAfterMs: 10 })).toBe(75);
    expect(backoffDelayMs({ attempt: 1, baseMs: 100, maxMs: 5_000, jitter01: 0.5, retryAfterMs: 60_000 })).toBe(5_000);
  });

  it('rejects inputs that are programmer errors', () => {
    expect(() => backoffDelayMs({ attempt: 0, baseMs: 1, maxMs: 2, jitter01: 0 })).toThrow();
    expect(() => backoffDelayMs({ attempt: 1, baseMs: 10, maxMs: 2, jitter01: 0 })).toThrow();
    expect(() => backoffDelayMs({ attempt: 1, baseMs: 1, maxMs: 2, jitter01: 1 })).toThrow();
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it('O5 reads delta-seconds, fractional seconds and HTTP dates; ignores garbage', () => {
    expect(parseRetryAfterMs('120', now)).toBe(120_000);
    expect(parseRetryAfterMs(' 1.5 ', now)).toBe(1_500);
    expect(parseRetryAfterMs('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfterMs('Mon, 31 Dec 2029 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
    expect(parseRetryAfterMs('-5', now)).toBeUndefined();
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe('CircuitBreaker', () => {
  const failure = (domain: 'network' | 'model' | 'account' | 'provider' | 'deadline'): DispatchOutcome => ({
    kind: 'error',
    domain,
    settlement: 'unknown',
    error: domain,
    latency_ms: 1,
  });
  const ok: DispatchOutcome = { kind: 'ok', output: '', latency_ms: 1 };

  it('O5 opens after the threshold of consecutive network/parse failures, half-opens after the cool-down, and a good probe closes it', () => {
    let now = 0;
    const breaker = new CircuitBreaker({
      failureThreshold: 3,
      coolDownMs: 1_000,
      halfOpenProbesMax: 1,
      nowMs: () => now,
    });
    for (const domain of ['network', 'model', 'network'] as const) {
      expect(breaker.acquire()).toEqual({ allowed: true });
      breaker.record(failure(domain));
    }
    expect(breaker.state).toBe('open');
    expect(breaker.acquire()).toEqual({ allowed: false, retryInMs: 1_000 });
    now = 1_000;
    expect(breaker.state).toBe('half-open');
    expect(breaker.acquire()).toEqual({ allowed: true });
    expect(breaker.acquire().allowed).toBe(false); // Only one probe at a time.
    breaker.record(ok);
    expect(breaker.state).toBe('closed');
  });

  it('O5 a failed probe reopens the breaker for a fresh cool-down', () => {
    let now = 0;
    const breaker = new CircuitBreaker({
      failureThreshold: 1,
      coolDownMs: 500,
      halfOpenProbesMax: 1,
      nowMs: () => now,
    });
    breaker.acquire();
    breaker.record(failure('network'));
    now = 600;
    expect(breaker.acquire().allowed).toBe(true);
    breaker.record(failure('model'));
    expect(breaker.acquire()).toEqual({ allowed: false, retryInMs: 500 });
  });

  it('O5 never trips on rate limits, overloads or deadlines, and a clear HTTP answer resets the count', () => {
    const breaker = new CircuitBreaker({
      failureThreshold: 2,
      coolDownMs: 1_000,
      halfOpenProbesMax: 1,
      nowMs: () => 0,
    });
    for (let i = 0; i < 20; i++) {
      breaker.acquire();
      breaker.record(failure(i % 3 === 0 ? 'account' : i % 3 === 1 ? 'provider' : 'deadline'));
    }
    expect(breaker.state).toBe('closed');
    breaker.record(failure('network'));
    breaker.record(failure('account'));
    breaker.record(failure('network'));
    expect(breaker.state).toBe('closed');
  });
});

describe.each(KINDS)('circuit breaker in the gateway (%s)', (kind) => {
  let server: ScriptedProvider;
  beforeAll(async () => {
    server = await ScriptedProvider.start();
  });
  afterAll(async () => {
    await server.stop();
  });
  const breaker = { failureThreshold: 2, coolDownMs: 60_000, halfOpenProbesMax: 1 };

  it('O5 429 and 503 never trip the breaker', async () => {
    const registry = registryFor(server, kind, { breaker });
    server.script('busy', [
      ...Array.from({ length: 3 }, () => ({ kind: 'status' as const, status: 429 })),
      ...Array.from({ length: 3 }, () => ({ kind: 'status' as const, status: 503 })),
    ]);
    for (let i = 0; i < 6; i++) expect((await registry.dispatch(request('busy'), noAbort())).kind).toBe('error');
    expect(registry.breakerOf('scripted')!.state).toBe('closed');
    expect(await registry.dispatch(request('busy'), noAbort())).toMatchObject({ kind: 'ok' });
    expect(server.calls('busy')).toBe(7);
    registry.close();
  });

  it('O5 network and parse failures trip it, and an open breaker fails network/failed without a network call', async () => {
    const registry = registryFor(server, kind, { breaker });
    server.script('flaky', [{ kind: 'reset' }, { kind: 'stream', chunks: ['x'], end: 'malformed' }]);
    expect(await registry.dispatch(request('flaky'), noAbort())).toMatchObject({ domain: 'network' });
    expect(await registry.dispatch(request('flaky'), noAbort())).toMatchObject({ domain: 'model' });
    expect(registry.breakerOf('scripted')!.state).toBe('open');
    const callsBefore = server.calls();
    const refused = await registry.dispatch(request('flaky'), noAbort());
    expect(refused).toMatchObject({
      kind: 'error',
      domain: 'network',
      settlement: 'failed',
      error: expect.stringContaining('no call made'),
    });
    expect(refused.kind === 'error' && refused.retry_after_ms).toBeGreaterThan(0);
    expect(server.calls()).toBe(callsBefore);
    registry.close();
  });
});
