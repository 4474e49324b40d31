// The refusal limit (ADR 0050): every refused request (a 4xx) takes a token from the bucket of
// its source and of the credential it presented; an empty bucket means 429 until it refills.
// Both tables are bounded, so a flood of new addresses or made-up keys costs fixed memory.
import { isIPv4, isIPv6 } from 'node:net';
import { Counter } from 'prom-client';

/**
 * Requests answered 429 because their source or credential had too many refusals, by which
 * table refused them. No address or credential is a label, so the series stay two.
 */
export const refusalsLimited = new Counter({
  name: 'tally_http_refusals_limited_total',
  help: 'HTTP requests answered 429 because their source or credential was refused too often, by which limit',
  labelNames: ['by'],
  registers: [],
});

interface Bucket {
  tokens: number;
  atMs: number;
}

export interface BucketLimits {
  /** Tokens a full bucket holds: the burst. */
  readonly capacity: number;
  readonly refillPerMs: number;
  /** Buckets kept at once; past it the least recently used one is forgotten. */
  readonly entriesMax: number;
}

/** Token buckets by key in a fixed-size table, least recently used first out. */
export class BoundedBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly limits: BucketLimits) {
    if (!(limits.capacity >= 1 && limits.refillPerMs > 0 && limits.entriesMax >= 1))
      throw new Error(`invalid bucket limits ${JSON.stringify(limits)}`);
  }

  get size(): number {
    return this.buckets.size;
  }

  /** How long until `key` has a token again: 0 when it has one now. Creates nothing. */
  waitMs(key: string, nowMs: number): number {
    const bucket = this.buckets.get(key);
    if (bucket === undefined) return 0;
    const level = this.levelOf(bucket, nowMs);
    // A full bucket is the same as none: forget it, so quiet keys free their room.
    if (level >= this.limits.capacity) this.buckets.delete(key);
    else if (level < 1) this.touch(key, bucket);
    return level >= 1 ? 0 : this.refillMs(level);
  }

  /** Takes one token from `key`'s bucket: 0 when it had one, else how long until it will. */
  take(key: string, nowMs: number): number {
    const bucket = this.buckets.get(key);
    const level = bucket === undefined ? this.limits.capacity : this.levelOf(bucket, nowMs);
    if (level < 1) {
      this.touch(key, bucket!);
      return this.refillMs(level);
    }
    this.touch(key, { tokens: level - 1, atMs: nowMs });
    if (this.buckets.size > this.limits.entriesMax) this.buckets.delete(this.buckets.keys().next().value!);
    return 0;
  }

  private levelOf(bucket: Bucket, nowMs: number): number {
    const refilled = bucket.tokens + Math.max(0, nowMs - bucket.atMs) * this.limits.refillPerMs;
    return Math.min(this.limits.capacity, refilled);
  }

  private refillMs(level: number): number {
    return Math.max(1, Math.ceil((1 - level) / this.limits.refillPerMs));
  }

  /** Moves the key to the young end of the table (a Map iterates in insertion order). */
  private touch(key: string, bucket: Bucket): void {
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
  }
}

export interface RefusalLimits {
  readonly refusalsPerMinuteMax: number;
  readonly sourcesMax: number;
  readonly credentialsMax: number;
}

/** Whom a request's refusals are counted against: its source, and the credential it presented if any. */
export interface RefusalKeys {
  readonly source: string;
  /** The presented credential's sha256 fingerprint (ADR 0007), verified or not. */
  readonly credential?: string | undefined;
}

export interface Limited {
  readonly by: 'source' | 'credential';
  readonly retryAfterMs: number;
}

const MINUTE_MS = 60_000;

export class RefusalLimiter {
  private readonly sources: BoundedBuckets;
  private readonly credentials: BoundedBuckets;

  constructor(
    readonly limits: RefusalLimits,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    const capacity = limits.refusalsPerMinuteMax;
    const refillPerMs = capacity / MINUTE_MS;
    this.sources = new BoundedBuckets({ capacity, refillPerMs, entriesMax: limits.sourcesMax });
    this.credentials = new BoundedBuckets({ capacity, refillPerMs, entriesMax: limits.credentialsMax });
  }

  /** Whether a request with these keys is to be refused at once, before it is read. */
  limited(keys: RefusalKeys): Limited | undefined {
    const now = this.nowMs();
    const bySource = this.sources.waitMs(keys.source, now);
    if (bySource > 0) return { by: 'source', retryAfterMs: bySource };
    const byCredential = keys.credential === undefined ? 0 : this.credentials.waitMs(keys.credential, now);
    return byCredential > 0 ? { by: 'credential', retryAfterMs: byCredential } : undefined;
  }

  /** Counts one refusal against the keys; past the limit, the 429 it becomes instead. */
  charge(keys: RefusalKeys): Limited | undefined {
    const now = this.nowMs();
    const bySource = this.sources.take(keys.source, now);
    if (bySource > 0) return { by: 'source', retryAfterMs: bySource };
    const byCredential = keys.credential === undefined ? 0 : this.credentials.take(keys.credential, now);
    return byCredential > 0 ? { by: 'credential', retryAfterMs: byCredential } : undefined;
  }

  /** Buckets held, for tests and metrics: never more than the limits' entries. */
  get entries(): { readonly sources: number; readonly credentials: number } {
    return { sources: this.sources.size, credentials: this.credentials.size };
  }
}

/**
 * Which answers count as refusals: every 4xx but 402 (the budget refused a valid request,
 * the ledger's verdict) and 429 (a rate limit's, this one's included, so a throttled client
 * is not refused further for waiting badly).
 */
export function isCountedRefusal(status: number): boolean {
  return status >= 400 && status < 500 && status !== 402 && status !== 429;
}

/**
 * The source a client address counts as: an IPv4 address itself (IPv4-mapped IPv6 included),
 * an IPv6 address by its /64, the block one host or home network is normally given, so
 * cycling through the addresses of one's own /64 gives no fresh allowance.
 */
export function sourceOf(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (isIPv4(address)) return address;
  const bare = address.split('%')[0]!.toLowerCase();
  if (!isIPv6(bare)) return `other:${address.slice(0, 64)}`;
  return `${ipv6Groups(bare).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, '::' expanded (a trailing dotted quad counts as two). */
function ipv6Groups(address: string): string[] {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const parts = (text: string | undefined) => (text ? text.split(':') : []);
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const h = parts(head);
  const t = parts(tail);
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - width(h) - width(t) }, () => '0');
  return [...h, ...zeros, ...t].map((g) => g.replace(/^0+(?=[0-9a-f])/, ''));
}
