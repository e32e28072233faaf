/**
 * A set of row indexes (a file's deleted rows), held as one sorted Float64Array without
 * duplicates: 8 bytes a value, no per-value objects, and union, iteration and
 * serialization are single linear passes. Row indexes are integers in [0, 2^53).
 */

let wrapSorted: (values: Float64Array) => RowIndexSet;
let viewOf: (set: RowIndexSet) => Float64Array;

/**
 * An immutable set of row indexes in ascending order. Build it with `fromSorted`,
 * `fromIndexes` or `empty`; combine with `union`.
 */
export class RowIndexSet implements Iterable<number> {
  /** Sorted, unique, safe non-negative integers; never exposed, never mutated. */
  readonly #values: Float64Array;

  private constructor(values: Float64Array) {
    this.#values = values;
  }

  /** The empty set. */
  static empty(): RowIndexSet {
    return new RowIndexSet(new Float64Array(0));
  }

  /**
   * A set from indexes already in strictly ascending order (copied).
   * Throws RangeError if they are not ascending, not integers, negative or above 2^53 − 1.
   */
  static fromSorted(values: ArrayLike<number>): RowIndexSet {
    const copy = Float64Array.from(values);
    for (let i = 0; i < copy.length; i++) {
      checkIndex(copy[i]!);
      if (i > 0 && copy[i]! <= copy[i - 1]!) {
        throw new RangeError(
          `row indexes are not strictly ascending at position ${i}: ${copy[i - 1]} then ${copy[i]}`,
        );
      }
    }
    return new RowIndexSet(copy);
  }

  /** A set from indexes in any order, duplicates allowed. Throws RangeError for an invalid index. */
  static fromIndexes(values: Iterable<number> | ArrayLike<number>): RowIndexSet {
    const copy = Float64Array.from(values as ArrayLike<number>);
    for (let i = 0; i < copy.length; i++) checkIndex(copy[i]!);
    copy.sort();
    let n = 0;
    for (let i = 0; i < copy.length; i++) {
      if (n === 0 || copy[i]! !== copy[n - 1]!) copy[n++] = copy[i]!;
    }
    return new RowIndexSet(n === copy.length ? copy : copy.slice(0, n));
  }

  /** Number of indexes in the set. */
  get cardinality(): number {
    return this.#values.length;
  }

  /** The largest index, or undefined for the empty set. */
  get max(): number | undefined {
    return this.#values[this.#values.length - 1];
  }

  /** The smallest index, or undefined for the empty set. */
  get min(): number | undefined {
    return this.#values[0];
  }

  /** True when `index` is in the set (binary search). */
  has(index: number): boolean {
    let lo = 0;
    let hi = this.#values.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.#values[mid]!;
      if (v === index) return true;
      if (v < index) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /** The indexes of both sets (a linear merge). */
  union(other: RowIndexSet): RowIndexSet {
    const a = this.#values;
    const b = other.#values;
    if (b.length === 0) return this;
    if (a.length === 0) return other;
    const out = new Float64Array(a.length + b.length);
    let i = 0;
    let j = 0;
    let n = 0;
    while (i < a.length && j < b.length) {
      const x = a[i]!;
      const y = b[j]!;
      if (x < y) ((out[n++] = x), i++);
      else if (y < x) ((out[n++] = y), j++);
      else ((out[n++] = x), i++, j++);
    }
    while (i < a.length) out[n++] = a[i++]!;
    while (j < b.length) out[n++] = b[j++]!;
    return new RowIndexSet(n === out.length ? out : out.slice(0, n));
  }

  /** True when both sets hold the same indexes. */
  equals(other: RowIndexSet): boolean {
    const a = this.#values;
    const b = other.#values;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  /** The indexes in ascending order. */
  *[Symbol.iterator](): Iterator<number> {
    for (let i = 0; i < this.#values.length; i++) yield this.#values[i]!;
  }

  /** A copy of the indexes in ascending order. */
  toFloat64Array(): Float64Array {
    return this.#values.slice();
  }

  /** The indexes in ascending order, as a plain array (for small sets and tests). */
  toArray(): number[] {
    return Array.from(this.#values);
  }

  static {
    wrapSorted = (values) => new RowIndexSet(values);
    viewOf = (set) => set.#values;
  }
}

function checkIndex(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`a row index must be an integer in [0, 2^53 - 1], not ${value}`);
  }
}

/**
 * For the codec in this folder only (not exported from the index): wrap values the caller
 * guarantees sorted, unique and valid, without copying or checking them again.
 */
export function trustedRowIndexSet(values: Float64Array): RowIndexSet {
  return wrapSorted(values);
}

/** For the codec in this folder only: the set's sorted values, without a copy. Do not mutate. */
export function sortedValues(set: RowIndexSet): Float64Array {
  return viewOf(set);
}
