import { describe, expect, it } from 'vitest';
import { fileActionKey, type DeletionVectorDescriptor } from '../../../src/delta/actions.js';
import {
  dvUniqueId,
  fileDescriptor,
  inlineDescriptor,
  parseRoaringBitmapArray,
  resolveDeletionVector,
  RowIndexSet,
  uuidToZ85,
  type DvLocation,
} from '../../../src/delta/deletion-vectors/index.js';
import { DeltaLogError, UnsupportedFeatureError } from '../../../src/errors.js';

const ROOT = 'file:///data/my%20table/';
const T14_DV: DeletionVectorDescriptor = {
  storageType: 'u',
  pathOrInlineDv: '^jP?.<zvDfIGb{C.FPij',
  offset: 1,
  sizeInBytes: 38,
  cardinality: 3,
};
const p = (pathOrInlineDv: string): DeletionVectorDescriptor => ({
  storageType: 'p',
  pathOrInlineDv,
  offset: 1,
  sizeInBytes: 34,
  cardinality: 1,
});
const keyOf = (location: DvLocation) => (location.kind === 'file' ? location.key : null);

describe('DV unique id', () => {
  it('is storageType + pathOrInlineDv, plus @offset only when offset is present', () => {
    expect(dvUniqueId(T14_DV)).toBe('u^jP?.<zvDfIGb{C.FPij@1');
    expect(dvUniqueId({ ...T14_DV, offset: 0 })).toBe('u^jP?.<zvDfIGb{C.FPij@0');
    expect(dvUniqueId({ ...T14_DV, offset: null })).toBe('u^jP?.<zvDfIGb{C.FPij');
    expect(
      dvUniqueId({
        storageType: 'i',
        pathOrInlineDv: 'wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L',
        sizeInBytes: 38,
        cardinality: 3,
      }),
    ).toBe('iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L');
  });

  it('agrees with the replay key fileActionKey builds after the path', () => {
    const path = 'part=1/part-00000-x.parquet';
    for (const dv of [
      T14_DV,
      { ...T14_DV, offset: 0 },
      { ...T14_DV, offset: undefined },
      { ...T14_DV, offset: null },
      inlineDescriptor(RowIndexSet.fromIndexes([3])),
    ]) {
      expect(fileActionKey(path, dv)).toBe(`${path}\u0000${dvUniqueId(dv)}`);
    }
  });
});

describe('resolving a descriptor to its bytes', () => {
  it("'u' without a prefix names deletion_vector_<uuid>.bin in the table root", () => {
    expect(resolveDeletionVector(T14_DV, ROOT)).toEqual({
      kind: 'file',
      key: 'deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin',
      offset: 1,
      sizeInBytes: 38,
    });
  });

  it("'u' with a prefix puts the file in the prefix folder; Z85 is never read as a path", () => {
    const dv = {
      ...T14_DV,
      pathOrInlineDv: `ab${uuidToZ85('44ccbf3f-b223-4581-9cd8-a7e569120ada')}`,
    };
    expect(dv.pathOrInlineDv).toBe('abm9JzgVlI!?Oy<+3x+y^b');
    expect(keyOf(resolveDeletionVector(dv, ROOT))).toBe(
      'ab/deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin',
    );
    // Z85 holds `/`, `%` and `?`: they belong to the UUID.
    const slashy = {
      ...T14_DV,
      pathOrInlineDv: uuidToZ85('00000000-0000-4000-8000-000000000000').replace(/^./, '/'),
    };
    expect(slashy.pathOrInlineDv.startsWith('/')).toBe(true);
    expect(keyOf(resolveDeletionVector(slashy, ROOT))).toMatch(
      /^deletion_vector_[0-9a-f-]{36}\.bin$/,
    );
  });

  it("'u' with a malformed value is a DeltaLogError", () => {
    expect(() =>
      resolveDeletionVector({ ...T14_DV, pathOrInlineDv: '^jP?.<zvDfIGb' }, ROOT),
    ).toThrow(/at least 20 characters/);
    expect(() =>
      resolveDeletionVector({ ...T14_DV, pathOrInlineDv: `../${T14_DV.pathOrInlineDv}` }, ROOT),
    ).toThrow(/random prefix "..\/" is not alphanumeric/);
    expect(() =>
      resolveDeletionVector({ ...T14_DV, pathOrInlineDv: '^jP?.<zvDfIGb{C.FPi"' }, ROOT),
    ).toThrow(DeltaLogError);
  });

  it("'p' is decoded once and must lie inside the table root", () => {
    expect(
      keyOf(resolveDeletionVector(p('file:///data/my%20table/deletion_vector_a.bin'), ROOT)),
    ).toBe('deletion_vector_a.bin');
    expect(keyOf(resolveDeletionVector(p('file:/data/my%20table/dv/x%2520y.bin'), ROOT))).toBe(
      'dv/x%20y.bin',
    );
    expect(
      keyOf(resolveDeletionVector(p('s3a://bucket/t/deletion_vector_a.bin'), 's3://bucket/t/')),
    ).toBe('deletion_vector_a.bin');
    // The same rules as a data file's absolute path (a scheme in any case names the same objects).
    expect(
      keyOf(resolveDeletionVector(p('S3A://bucket/t/deletion_vector_a.bin'), 's3://bucket/t/')),
    ).toBe('deletion_vector_a.bin');
    expect(
      resolveDeletionVector(p('file:///data/my%20table/deletion_vector_a.bin'), ROOT),
    ).toMatchObject({ offset: 1, sizeInBytes: 34 });
  });

  it("'p' outside the table root is refused, naming the path", () => {
    for (const outside of [
      'file:///data/other/deletion_vector_a.bin',
      'file:///data/my%20table2/deletion_vector_a.bin',
      'file:///data/my%20table/../other/deletion_vector_a.bin',
      'file:///data/my%20table/',
      'deletion_vector_a.bin',
      's3://bucket/t/deletion_vector_a.bin',
    ]) {
      let err: unknown;
      try {
        resolveDeletionVector(p(outside), ROOT);
      } catch (e) {
        err = e;
      }
      expect(err, outside).toBeInstanceOf(DeltaLogError);
      expect((err as Error).message).toContain(
        `the 'p' path ${JSON.stringify(outside)} is not a file inside the table root ${ROOT}`,
      );
      expect((err as DeltaLogError).context).toMatchObject({ key: outside, uri: ROOT });
    }
    expect(() => resolveDeletionVector(p('file:///data/my%20table/%E0%A4%A.bin'), ROOT)).toThrow(
      /not valid percent-encoding/,
    );
  });

  it("'i' round-trips: Z85 padded to 4 bytes, sizeInBytes without the padding, no offset", () => {
    for (const values of [
      [0, 7, 14],
      [1],
      [70, 81],
      Array.from({ length: 5000 }, (_, i) => 3 * i),
      [2 ** 35],
    ]) {
      const set = RowIndexSet.fromIndexes(values);
      const dv = inlineDescriptor(set);
      expect(dv.storageType).toBe('i');
      expect(dv).not.toHaveProperty('offset');
      expect(dv.cardinality).toBe(set.cardinality);
      expect(dv.pathOrInlineDv).toHaveLength(Math.ceil(dv.sizeInBytes / 4) * 5);
      const location = resolveDeletionVector(dv, ROOT);
      if (location.kind !== 'inline') throw new Error('expected inline');
      expect(location.bytes).toHaveLength(dv.sizeInBytes);
      expect(parseRoaringBitmapArray(location.bytes).equals(set)).toBe(true);
    }
    const bad = inlineDescriptor(RowIndexSet.fromIndexes([0, 7, 14]));
    expect(() => resolveDeletionVector({ ...bad, sizeInBytes: 41 }, ROOT)).toThrow(
      /inline data of 50 characters does not match sizeInBytes 41 \(expected 55\)/,
    );
  });

  it("'r' and unknown storage types are refused as unsupported, naming the type", () => {
    for (const storageType of ['r', 'x', '']) {
      let err: unknown;
      try {
        resolveDeletionVector({ ...T14_DV, storageType }, ROOT);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UnsupportedFeatureError);
      expect((err as UnsupportedFeatureError).feature).toBe('deletionVectors');
      expect((err as Error).message).toContain(
        `deletion vector storage type ${JSON.stringify(storageType)} is not supported`,
      );
    }
  });

  it('offsets, sizes and cardinalities outside what the protocol allows are DeltaLogErrors', () => {
    expect(() => resolveDeletionVector({ ...T14_DV, sizeInBytes: -1 }, ROOT)).toThrow(
      /sizeInBytes -1 is not an int32/,
    );
    expect(() => resolveDeletionVector({ ...T14_DV, offset: 2 ** 31 }, ROOT)).toThrow(
      /offset 2147483648 is not an int32/,
    );
    expect(() => resolveDeletionVector({ ...T14_DV, cardinality: 1.5 }, ROOT)).toThrow(
      /cardinality 1.5 is not a count/,
    );
    expect(() =>
      resolveDeletionVector({ ...T14_DV, pathOrInlineDv: undefined as unknown as string }, ROOT),
    ).toThrow(/no pathOrInlineDv/);
  });
});

describe('new descriptors', () => {
  it("a 'u' descriptor for a written file carries offset, size and cardinality, never maxRowIndex", () => {
    const uuid = 'd12e7d16-e46d-48c9-8a71-b222c26dfc3b';
    const dv = fileDescriptor({ uuid, entry: { offset: 1, sizeInBytes: 38 }, cardinality: 3 });
    expect(dv).toEqual(T14_DV);
    expect(Object.keys(dv)).not.toContain('maxRowIndex');
    const prefixed = fileDescriptor({
      uuid,
      prefix: 'Q7',
      entry: { offset: 43, sizeInBytes: 34 },
      cardinality: 1,
    });
    expect(prefixed.pathOrInlineDv).toBe('Q7^jP?.<zvDfIGb{C.FPij');
    expect(keyOf(resolveDeletionVector(prefixed, ROOT))).toBe(`Q7/deletion_vector_${uuid}.bin`);
    expect(() =>
      fileDescriptor({ uuid, prefix: 'a/b', entry: { offset: 1, sizeInBytes: 1 }, cardinality: 1 }),
    ).toThrow(/not alphanumeric/);
  });
});
