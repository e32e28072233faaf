import { describe, expect, it } from 'vitest';
import { RowIndexSet } from '../../../src/delta/deletion-vectors/index.js';

describe('RowIndexSet', () => {
  it('fromIndexes sorts and drops duplicates', () => {
    const s = RowIndexSet.fromIndexes([14, 0, 7, 7, 0]);
    expect(s.toArray()).toEqual([0, 7, 14]);
    expect([...s]).toEqual([0, 7, 14]);
    expect({ cardinality: s.cardinality, min: s.min, max: s.max }).toEqual({
      cardinality: 3,
      min: 0,
      max: 14,
    });
    expect(RowIndexSet.fromIndexes(new Set([3, 1])).toArray()).toEqual([1, 3]);
  });

  it('the empty set has no min or max', () => {
    const s = RowIndexSet.empty();
    expect({ cardinality: s.cardinality, min: s.min, max: s.max }).toEqual({
      cardinality: 0,
      min: undefined,
      max: undefined,
    });
    expect([...s]).toEqual([]);
  });

  it('fromSorted accepts strictly ascending indexes and refuses anything else', () => {
    expect(RowIndexSet.fromSorted([1, 2, 2 ** 40]).toArray()).toEqual([1, 2, 2 ** 40]);
    expect(() => RowIndexSet.fromSorted([1, 1])).toThrow(
      /not strictly ascending at position 1: 1 then 1/,
    );
    expect(() => RowIndexSet.fromSorted([2, 1])).toThrow(RangeError);
  });

  it('refuses negative, fractional and unsafe indexes', () => {
    for (const bad of [-1, 1.5, NaN, 2 ** 53, Infinity]) {
      expect(() => RowIndexSet.fromIndexes([bad]), String(bad)).toThrow(RangeError);
      expect(() => RowIndexSet.fromSorted([bad]), String(bad)).toThrow(RangeError);
    }
  });

  it('union merges in one pass, keeping each index once', () => {
    const a = RowIndexSet.fromIndexes([0, 7, 14]);
    const b = RowIndexSet.fromIndexes([1, 7, 2 ** 33]);
    expect(a.union(b).toArray()).toEqual([0, 1, 7, 14, 2 ** 33]);
    expect(b.union(a).equals(a.union(b))).toBe(true);
    expect(a.union(RowIndexSet.empty()).equals(a)).toBe(true);
    expect(RowIndexSet.empty().union(a).equals(a)).toBe(true);
    expect(a.toArray()).toEqual([0, 7, 14]); // unchanged
  });

  it('union of two million-index sets is linear', () => {
    const evens = RowIndexSet.fromSorted(Float64Array.from({ length: 1_000_000 }, (_, i) => 2 * i));
    const odds = RowIndexSet.fromSorted(
      Float64Array.from({ length: 1_000_000 }, (_, i) => 2 * i + 1),
    );
    const all = evens.union(odds);
    expect(all.cardinality).toBe(2_000_000);
    expect(all.max).toBe(1_999_999);
    expect(all.has(1_234_567)).toBe(true);
  });

  it('has finds members by binary search', () => {
    const s = RowIndexSet.fromIndexes([2, 4, 8, 2 ** 50]);
    expect([0, 2, 3, 4, 8, 9, 2 ** 50].map((i) => s.has(i))).toEqual([
      false,
      true,
      false,
      true,
      true,
      false,
      true,
    ]);
    expect(RowIndexSet.empty().has(0)).toBe(false);
  });

  it('copies in and out, so callers cannot change a set', () => {
    const input = [1, 2, 3];
    const s = RowIndexSet.fromSorted(input);
    input[0] = 99;
    const out = s.toFloat64Array();
    out[1] = 99;
    expect(s.toArray()).toEqual([1, 2, 3]);
  });
});
