// A small persistent map for the tree's growing indexes (holds, request ids, command
// receipts). `evolve` must stay pure — group commit decides on tentative states and
// drops them on a conflict — but copying a whole Map per event made a hot tree's cost
// grow with its history (a profile showed map copies and their garbage taking most of
// the CPU). Keys hash into fixed buckets; an update copies the bucket array and one
// bucket, so it costs about n/BUCKETS instead of n. Iteration is deterministic: bucket
// order, then insertion order within a bucket.
const BUCKETS = 256;

interface Entry<V> {
  readonly value: V;
  /** When the key was first set: what `inOrder` sorts by. */
  readonly order: number;
}

export class PersistentMap<V> {
  private constructor(
    private readonly buckets: readonly (ReadonlyMap<string, Entry<V>> | undefined)[],
    readonly size: number,
    /** Keys ever set; an overwritten key keeps its first place. */
    private readonly inserted: number,
  ) {}

  static empty<V>(): PersistentMap<V> {
    return new PersistentMap<V>(new Array<ReadonlyMap<string, Entry<V>> | undefined>(BUCKETS).fill(undefined), 0, 0);
  }

  /** A new map with `key` set; this one is unchanged. */
  with(key: string, value: V): PersistentMap<V> {
    const index = bucketOf(key);
    const bucket = new Map(this.buckets[index]);
    const existing = bucket.get(key);
    bucket.set(key, { value, order: existing?.order ?? this.inserted });
    const buckets = this.buckets.slice();
    buckets[index] = bucket;
    const added = existing === undefined ? 1 : 0;
    return new PersistentMap(buckets, this.size + added, this.inserted + added);
  }

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key)?.value;
  }

  has(key: string): boolean {
    return this.buckets[bucketOf(key)]?.has(key) ?? false;
  }

  *values(): Generator<V, void, undefined> {
    for (const bucket of this.buckets) if (bucket) for (const entry of bucket.values()) yield entry.value;
  }

  *entries(): Generator<[string, V], void, undefined> {
    for (const bucket of this.buckets)
      if (bucket) for (const [key, entry] of bucket.entries()) yield [key, entry.value];
  }

  /** The values in the order their keys were first set (O(n log n): for listings, not hot paths). */
  inOrder(): V[] {
    const all: Entry<V>[] = [];
    for (const bucket of this.buckets) if (bucket) all.push(...bucket.values());
    return all.sort((a, b) => a.order - b.order).map((e) => e.value);
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
