/**
 * Splitting a plan's files into batches (pure): consecutive runs in plan order, bounded by file
 * count and bytes, a file larger than the byte bound alone in its batch.
 */
import { describe, expect, it } from 'vitest';
import { splitBatches } from '../../src/job/batches.js';
import { prng } from '../../scripts/lib/prng.js';

interface File {
  key: string;
  size: number;
}

/** Files f0, f1, … with the given sizes. */
const files = (...sizes: number[]): File[] => sizes.map((size, i) => ({ key: `f${i}`, size }));
const keys = (batches: File[][]) => batches.map((b) => b.map((f) => f.key));

describe('splitBatches', () => {
  it('gives no batches for no files', () => {
    expect(splitBatches([], 10, 1000)).toEqual([]);
  });

  it('closes a batch at maxFiles files', () => {
    expect(keys(splitBatches(files(1, 1, 1, 1, 1), 2, 1000))).toEqual([
      ['f0', 'f1'],
      ['f2', 'f3'],
      ['f4'],
    ]);
    expect(keys(splitBatches(files(1, 1, 1), 1, 1000))).toEqual([['f0'], ['f1'], ['f2']]);
  });

  it('closes a batch before a file that would take it past maxBytes; exactly maxBytes still fits', () => {
    expect(keys(splitBatches(files(40, 40, 40), 10, 100))).toEqual([['f0', 'f1'], ['f2']]);
    expect(keys(splitBatches(files(50, 50, 1), 10, 100))).toEqual([['f0', 'f1'], ['f2']]);
    expect(keys(splitBatches(files(60, 30, 10, 1), 10, 100))).toEqual([['f0', 'f1', 'f2'], ['f3']]);
  });

  it('puts a file larger than maxBytes in a batch of its own, wherever it comes', () => {
    expect(keys(splitBatches(files(500, 10, 10), 10, 100))).toEqual([['f0'], ['f1', 'f2']]);
    expect(keys(splitBatches(files(10, 500, 10), 10, 100))).toEqual([['f0'], ['f1'], ['f2']]);
    expect(keys(splitBatches(files(10, 10, 500), 10, 100))).toEqual([['f0', 'f1'], ['f2']]);
    expect(keys(splitBatches(files(500, 600), 10, 100))).toEqual([['f0'], ['f1']]);
  });

  it('counts empty files against maxFiles only', () => {
    expect(keys(splitBatches(files(0, 0, 0, 100, 0), 3, 100))).toEqual([
      ['f0', 'f1', 'f2'],
      ['f3', 'f4'],
    ]);
  });

  it('hands back the same file objects', () => {
    const input = files(1, 2);
    const [batch] = splitBatches(input, 10, 100);
    expect(batch![0]).toBe(input[0]);
    expect(batch![1]).toBe(input[1]);
  });

  it('keeps plan order and both bounds over random plans, and fills each batch as far as the bounds allow', () => {
    const random = prng(20250301);
    for (let round = 0; round < 200; round++) {
      const maxFiles = 1 + Math.floor(random() * 6);
      const maxBytes = 50 + Math.floor(random() * 200);
      const plan = files(
        ...Array.from({ length: Math.floor(random() * 40) }, () => Math.floor(random() * 300)),
      );
      const batches = splitBatches(plan, maxFiles, maxBytes);
      const where = `round ${round}: ${JSON.stringify({ maxFiles, maxBytes, sizes: plan.map((f) => f.size) })}`;
      // Order kept, nothing lost or repeated.
      expect(batches.flat(), where).toEqual(plan);
      for (const [i, batch] of batches.entries()) {
        const bytes = batch.reduce((n, f) => n + f.size, 0);
        expect(batch.length, where).toBeGreaterThan(0);
        expect(batch.length, where).toBeLessThanOrEqual(maxFiles);
        if (batch.length > 1) expect(bytes, where).toBeLessThanOrEqual(maxBytes);
        // Greedy: the next batch's first file would have broken a bound of this one.
        const next = batches[i + 1]?.[0];
        if (next)
          expect(batch.length === maxFiles || bytes + next.size > maxBytes, where).toBe(true);
      }
    }
  });
});
