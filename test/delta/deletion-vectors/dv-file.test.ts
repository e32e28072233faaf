import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  dvByteRange,
  listDvFileEntries,
  packDvFile,
  parseRoaringBitmapArray,
  readDvFromFile,
  RowIndexSet,
  serializeRowIndexSet,
  unpackStoredDv,
} from '../../../src/delta/deletion-vectors/index.js';
import { DeltaLogError } from '../../../src/errors.js';
import { sharedTable } from '../../helpers/shared-tables.js';

const T14_BIN = join(
  sharedTable('deletion-vectors'),
  'deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin',
);
const T21 = sharedTable('table-with-dv-large');

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('.bin files', () => {
  it('one DV {0, 7, 14} packs into the 47 bytes Spark wrote for table 14', () => {
    const { bytes, entries } = packDvFile([
      serializeRowIndexSet(RowIndexSet.fromIndexes([0, 7, 14])),
    ]);
    expect(entries).toEqual([{ offset: 1, sizeInBytes: 38 }]);
    expect(Buffer.from(bytes).equals(readFileSync(T14_BIN))).toBe(true);
    expect(Buffer.from(bytes.subarray(43)).toString('hex')).toBe('fd54c000'); // the CRC, big-endian
  });

  it('packs several DVs at the offsets Spark uses (first at 1, next at offset + 4 + size + 4), each reading back', () => {
    const sets = [[0], [70, 81], Array.from({ length: 5000 }, (_, i) => i * 2), [2 ** 33], [3]].map(
      (v) => RowIndexSet.fromIndexes(v),
    );
    const { bytes, entries } = packDvFile(sets.map(serializeRowIndexSet));
    expect(bytes[0]).toBe(1);
    expect(entries.map((e) => e.offset)).toEqual([
      1,
      43,
      87,
      87 + 4 + (12 + 4 + 8 + 8 + 8192) + 4,
      8319 + 4 + 34 + 4,
    ]);
    expect(entries.map((e) => e.sizeInBytes)).toEqual([34, 36, 8224, 34, 34]);
    expect(bytes.length).toBe(entries.at(-1)!.offset + 4 + 34 + 4);
    entries.forEach((entry, i) => {
      expect(parseRoaringBitmapArray(readDvFromFile(bytes, entry)).equals(sets[i]!)).toBe(true);
      const range = dvByteRange(entry);
      expect(
        parseRoaringBitmapArray(
          unpackStoredDv(bytes.subarray(range.start, range.end + 1), entry),
        ).equals(sets[i]!),
      ).toBe(true);
    });
    expect(listDvFileEntries(bytes)).toEqual(entries);
  });

  it('walks the two packed files of table 21 at the offsets its log names', () => {
    const first = readFileSync(
      join(T21, 'deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin'),
    );
    const second = readFileSync(
      join(T21, 'deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin'),
    );
    expect([first.length, second.length]).toEqual([211, 259]);
    expect(listDvFileEntries(first).map((e) => e.offset)).toEqual([1, 43, 85, 127, 169]);
    expect(listDvFileEntries(second).map((e) => e.offset)).toEqual([1, 43, 87, 131, 173, 215]);
    const at169 = readDvFromFile(first, { offset: 169, sizeInBytes: 34 });
    expect(parseRoaringBitmapArray(at169).toArray()).toEqual([32]);
  });

  it('a flipped bitmap byte fails the CRC, naming the key and the offset', () => {
    const { bytes, entries } = packDvFile([
      serializeRowIndexSet(RowIndexSet.fromIndexes([1])),
      serializeRowIndexSet(RowIndexSet.fromIndexes([70, 81])),
    ]);
    bytes[43 + 4 + 30]! ^= 0x01;
    const err = thrown(() =>
      readDvFromFile(bytes, entries[1]!, { key: 'deletion_vector_x.bin', uri: 'file:///t/' }),
    );
    expect(err).toBeInstanceOf(DeltaLogError);
    expect(err.message).toMatch(
      /^\[delta\] deletion vector in "deletion_vector_x.bin" at offset 43 \(table file:\/\/\/t\/\): CRC-32 mismatch: stored [0-9a-f]{8}, computed [0-9a-f]{8} over 36 bytes$/,
    );
    expect((err as DeltaLogError).context).toMatchObject({
      key: 'deletion_vector_x.bin',
      offset: 43,
      uri: 'file:///t/',
    });
    expect(parseRoaringBitmapArray(readDvFromFile(bytes, entries[0]!)).toArray()).toEqual([1]); // its neighbour is intact
    expect(() => listDvFileEntries(bytes)).toThrow(/at offset 43: CRC-32 mismatch/);
  });

  it('a size field that disagrees with the descriptor, a short read and a bad version byte are refused', () => {
    const { bytes } = packDvFile([serializeRowIndexSet(RowIndexSet.fromIndexes([1]))]);
    expect(() => readDvFromFile(bytes, { offset: 1, sizeInBytes: 36 })).toThrow(
      /the size field says 34 bytes, but the descriptor says 36/,
    );
    expect(() => readDvFromFile(bytes, { offset: 0, sizeInBytes: 34 })).toThrow(
      /the size field says 16777216 bytes/,
    );
    expect(() => unpackStoredDv(bytes.subarray(1, 30), { offset: 1, sizeInBytes: 34 })).toThrow(
      /the file ends 13 bytes before the end of the DV/,
    );
    expect(() => unpackStoredDv(bytes.subarray(1, 3), { offset: 1, sizeInBytes: 34 })).toThrow(
      /ends before the size field/,
    );
    const v2 = Uint8Array.from(bytes);
    v2[0] = 2;
    expect(() => readDvFromFile(v2, { offset: 1, sizeInBytes: 34 })).toThrow(
      /unknown file format version 2/,
    );
    expect(() => listDvFileEntries(Uint8Array.from([...bytes, 0, 0]))).toThrow(
      /2 stray bytes at the end of the file/,
    );
  });

  it('never packs an empty file', () => {
    expect(() => packDvFile([])).toThrow(RangeError);
  });
});
