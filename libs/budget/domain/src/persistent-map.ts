// A small persistent map for the tree's growing indexes (holds, request ids, command
// receipts). `evolve` must stay pure — group commit decides on tentative states and
// drops them on a conflict — but copying a whole Map per event made a hot tree's cost
// grow with its history (a profile showed map copies and their garbage taking most of
// the CPU). Keys hash into fixed buckets; an update copies the bucket array and one
// bucket, so it costs about n/BUCKETS instead of n. Iteration is deterministic: bucket
// order, then insertion order within a bucket.
const BUCKETS = 256;

export class PersistentMap<V> {
  private constructor(
    private readonly buckets: readonly (ReadonlyMap<string, V> | undefined)[],
    readonly size: number,
  ) {}

  static empty<V>(): PersistentMap<V> {
    return new PersistentMap<V>(new Array<ReadonlyMap<string, V> | undefined>(BUCKETS).fill(undefined), 0);
  }

  /** A new map with `key` set; this one is unchanged. */
  with(key: string, value: V): PersistentMap<V> {
    const index = bucketOf(key);
    const bucket = new Map(this.buckets[index]);
    const added = !bucket.has(key);
    bucket.set(key, value);
    const buckets = this.buckets.slice();
    buckets[index] = bucket;
    return new PersistentMap(buckets, this.size + (added ? 1 : 0));
  }

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key);
  }

  has(key: string): boolean {
    return this.buckets[bucketOf(key)]?.has(key) ?? false;
  }

  *values(): Generator<V, void, undefined> {
    for (const bucket of this.buckets) if (bucket) yield* bucket.values();
  }

  *entries(): Generator<[string, V], void, undefined> {
    for (const bucket of this.buckets) if (bucket) yield* bucket.entries();
  }
}

/** FNV-1a over UTF-16 code units: cheap, stable across processes and runs. */
function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % BUCKETS;
}
