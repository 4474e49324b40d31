// The simulator's only source of randomness: sfc32 (Chris Doty-Humphrey's Small Fast
// Counting generator, 128 bits of state, 32-bit output), seeded through splitmix32. Each
// concern (workload, network, faults) draws from its own stream derived from the seed, so
// turning one kind of fault off while shrinking does not reshuffle the workload.

function splitmix32(state: { x: number }): number {
  state.x = (state.x + 0x9e3779b9) | 0;
  let z = state.x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** `seed` is any safe integer; `stream` names the concern that draws from this generator. */
  constructor(seed: number, stream: number) {
    if (!Number.isSafeInteger(seed) || seed < 0)
      throw new Error(`seed must be a non-negative safe integer, got ${seed}`);
    const state = { x: (seed % 0x1_0000_0000) ^ Math.imul(Math.floor(seed / 0x1_0000_0000), 0x27d4eb2d) ^ stream };
    this.a = splitmix32(state);
    this.b = splitmix32(state);
    this.c = splitmix32(state);
    this.d = splitmix32(state);
    // The first outputs of a freshly seeded sfc32 are poorly mixed: discard them.
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.u32() / 0x1_0000_0000;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!(Number.isInteger(n) && n >= 1)) throw new Error(`int(n) needs a positive integer, got ${n}`);
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return p > 0 && this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(items.length)]!;
  }

  /** A latency-like wait: mostly near `typicalMs`, now and then several times longer. */
  latency(typicalMs: number): number {
    const base = typicalMs * (0.25 + this.float());
    return this.chance(0.05) ? base * (2 + this.int(8)) : base;
  }
}

/** The streams a run draws from. */
export const Streams = { workload: 1, network: 2, faults: 3, provider: 4, rail: 5, schedule: 6 } as const;

export interface Randomness {
  readonly workload: Prng;
  readonly network: Prng;
  readonly faults: Prng;
  readonly provider: Prng;
  readonly rail: Prng;
  readonly schedule: Prng;
}

export function randomnessOf(seed: number): Randomness {
  return {
    workload: new Prng(seed, Streams.workload),
    network: new Prng(seed, Streams.network),
    faults: new Prng(seed, Streams.faults),
    provider: new Prng(seed, Streams.provider),
    rail: new Prng(seed, Streams.rail),
    schedule: new Prng(seed, Streams.schedule),
  };
}
