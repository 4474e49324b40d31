// Proves the refusal limit's arithmetic and its memory bound (ADR 0050): a bucket allows its
// burst, then refills at the per-minute rate; the tables never hold more keys than their bound;
// IPv6 sources count by /64; and the settings load with their defaults and bounds.
import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../src/config.loader.js';
import { BoundedBuckets, isCountedRefusal, RefusalLimiter, sourceOf } from '../src/refusal-limit.js';

describe('ADR 0050 the refusal limit', () => {
  it('Issue 18 (rule 6): a source gets its per-minute refusals in a burst, then one per 60/N seconds, with the wait it must keep', () => {
    let now = 1_000;
    const limiter = new RefusalLimiter({ refusalsPerMinuteMax: 6, sourcesMax: 16, credentialsMax: 16 }, () => now);
    const source = { source: '203.0.113.7' };
    for (let i = 0; i < 6; i++) expect(limiter.charge(source)).toBeUndefined();
    expect(limiter.limited(source)).toEqual({ by: 'source', retryAfterMs: 10_000 });
    expect(limiter.charge(source)).toEqual({ by: 'source', retryAfterMs: 10_000 });
    now += 4_000;
    expect(limiter.limited(source)).toEqual({ by: 'source', retryAfterMs: 6_000 });
    now += 6_000;
    expect(limiter.limited(source)).toBeUndefined();
    expect(limiter.charge(source)).toBeUndefined();
    expect(limiter.limited(source)?.by).toBe('source');
    // Another source is not touched by this one's refusals.
    expect(limiter.limited({ source: '203.0.113.8' })).toBeUndefined();
  });

  it('Issue 18 (rule 6): a credential is limited wherever it comes from, and a source whatever credentials it makes up', () => {
    const limiter = new RefusalLimiter({ refusalsPerMinuteMax: 3, sourcesMax: 16, credentialsMax: 16 }, () => 0);
    for (let i = 0; i < 3; i++)
      expect(limiter.charge({ source: `198.51.100.${i}`, credential: 'fp-a' })).toBeUndefined();
    expect(limiter.limited({ source: '198.51.100.9', credential: 'fp-a' })?.by).toBe('credential');
    expect(limiter.limited({ source: '198.51.100.9', credential: 'fp-b' })).toBeUndefined();
    for (let i = 0; i < 3; i++) limiter.charge({ source: '192.0.2.1', credential: `made-up-${i}` });
    expect(limiter.limited({ source: '192.0.2.1', credential: 'made-up-new' })?.by).toBe('source');
  });

  it('Issue 18 (rule 6): a flood of new keys never holds more buckets than the bound, and the least recently refused go first', () => {
    // One token a minute: every key below is left empty by its one refusal.
    const buckets = new BoundedBuckets({ capacity: 1, refillPerMs: 1 / 60_000, entriesMax: 100 });
    buckets.take('flooder', 0);
    for (let i = 0; i < 10_000; i++) {
      buckets.take(`key-${i}`, 1);
      // The flooder keeps knocking, so its empty bucket stays young and it stays limited.
      if (i % 50 === 0) expect(buckets.waitMs('flooder', 1)).toBeGreaterThan(0);
      expect(buckets.size).toBeLessThanOrEqual(100);
    }
    expect(buckets.size).toBe(100);
    expect(buckets.waitMs('flooder', 1)).toBeGreaterThan(0);
    expect(buckets.waitMs('key-9999', 1)).toBeGreaterThan(0);
    // key-0 was forgotten: its next refusal starts a full bucket again.
    expect(buckets.waitMs('key-0', 1)).toBe(0);
    // A bucket that has refilled is forgotten when looked at: quiet keys free their room.
    expect(buckets.waitMs('key-9999', 120_000)).toBe(0);
    expect(buckets.size).toBe(99);
  });

  it('Issue 18 (rule 6): IPv4 counts by address (mapped or not) and IPv6 by its /64; 402 and 429 are not counted refusals', () => {
    expect(sourceOf('203.0.113.7')).toBe('203.0.113.7');
    expect(sourceOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(sourceOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8::5')).toBe('2001:db8:0:0::/64');
    expect(sourceOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(sourceOf(undefined)).toBe('unknown');
    expect([400, 401, 403, 404, 409, 413, 422].every(isCountedRefusal)).toBe(true);
    expect([200, 302, 402, 429, 500, 503].some(isCountedRefusal)).toBe(false);
  });

  it('Issue 18 (rule 6): http.refusals_per_minute_max and the table bounds have defaults and are checked at boot', () => {
    expect(loadConfig({}).http).toEqual({
      refusals_per_minute_max: 600,
      refusal_sources_max: 10_000,
      refusal_credentials_max: 10_000,
    });
    expect(loadConfig({ TALLY__HTTP__REFUSALS_PER_MINUTE_MAX: '5' }).http.refusals_per_minute_max).toBe(5);
    expect(() => loadConfig({ TALLY__HTTP__REFUSALS_PER_MINUTE_MAX: '0' })).toThrow(ConfigError);
    expect(() => loadConfig({ TALLY__HTTP__REFUSAL_SOURCES_MAX: '2000000' })).toThrow(
      /http\.refusal_sources_max.*TALLY__HTTP__REFUSAL_SOURCES_MAX/,
    );
  });
});
