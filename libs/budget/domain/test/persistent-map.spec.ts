// Proves the persistent map behind the tree's indexes: an update never changes the map it
// came from (evolve stays pure), and reads and iteration see exactly what was written.
import { describe, expect, it } from '@jest/globals';
import { PersistentMap } from '../src/persistent-map.js';

describe('PersistentMap', () => {
  it('with() returns a new map and leaves the original unchanged', () => {
    const empty = PersistentMap.empty<number>();
    const one = empty.with('a', 1);
    const two = one.with('b', 2).with('a', 10);
    expect([empty.size, one.size, two.size]).toEqual([0, 1, 2]);
    expect(one.get('a')).toBe(1);
    expect(two.get('a')).toBe(10);
    expect(one.has('b')).toBe(false);
    expect(empty.get('a')).toBeUndefined();
  });

  it('holds thousands of keys, and iterates each exactly once in the same order every time', () => {
    let map = PersistentMap.empty<number>();
    for (let i = 0; i < 5_000; i++) map = map.with(`budget-hold:req-${i}:cap:0`, i);
    const values = [...map.values()];
    expect(values).toHaveLength(5_000);
    expect(new Set(values).size).toBe(5_000);
    let again = PersistentMap.empty<number>();
    for (let i = 0; i < 5_000; i++) again = again.with(`budget-hold:req-${i}:cap:0`, i);
    expect([...again.entries()]).toEqual([...map.entries()]);
    for (let i = 0; i < 5_000; i += 499) expect(map.get(`budget-hold:req-${i}:cap:0`)).toBe(i);
  });

  it('inOrder() lists values in the order their keys were first set, an overwrite keeping its place (receipts oldest first)', () => {
    let map = PersistentMap.empty<string>();
    const keys = Array.from({ length: 1_000 }, (_, i) => `receipt:${(i * 7919) % 1_000}`);
    for (const key of keys) map = map.with(key, key);
    const before = map;
    map = map.with(keys[10]!, 'overwritten');
    expect(before.inOrder()).toEqual(keys);
    expect(map.inOrder()).toEqual(keys.map((k, i) => (i === 10 ? 'overwritten' : k)));
    expect(map.size).toBe(1_000);
  });
});
