/**
 * The add that gives a live file a deletion vector (PROTOCOL.md "Deletion Vectors"): the live
 * add with the DV and loosened stats, numRecords always present (a DV's add must carry it).
 */
import { describe, expect, it } from 'vitest';
import type { DeletionVectorDescriptor } from '../../src/delta/actions.js';
import { addWithDeletionVector } from '../../src/delta/file-actions.js';
import type { LiveFile } from '../../src/delta/snapshot.js';

const DV: DeletionVectorDescriptor = {
  storageType: 'u',
  pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^',
  offset: 1,
  sizeInBytes: 36,
  cardinality: 2,
};

function live(stats: string | undefined): LiveFile {
  return {
    path: 'part-0.parquet',
    partitionValues: {},
    size: 100,
    modificationTime: 1,
    dataChange: true,
    ...(stats === undefined ? {} : { stats }),
  } as LiveFile;
}

describe('addWithDeletionVector', () => {
  it.each([
    [
      'stats with numRecords keep every byte and get tightBounds false',
      '{"numRecords":10,"minValues":{"id":1},"maxValues":{"id":9007199254740993}}',
      '{"numRecords":10,"minValues":{"id":1},"maxValues":{"id":9007199254740993},"tightBounds":false}',
    ],
    [
      'tightBounds true becomes false',
      '{"numRecords":10,"tightBounds":true}',
      '{"numRecords":10,"tightBounds":false}',
    ],
    [
      'stats without numRecords get the physical row count',
      '{"minValues":{"id":1},"maxValues":{"id":9}}',
      '{"numRecords":12,"minValues":{"id":1},"maxValues":{"id":9},"tightBounds":false}',
    ],
    ['empty stats', '{}', '{"numRecords":12,"tightBounds":false}'],
    ['no stats', undefined, '{"numRecords":12,"tightBounds":false}'],
  ])('%s', (_what, stats, expected) => {
    const add = addWithDeletionVector(live(stats), DV, 12);
    expect(add).toMatchObject({
      path: 'part-0.parquet',
      deletionVector: DV,
      dataChange: true,
      stats: expected,
    });
    expect(JSON.parse(add.stats!)).toMatchObject({
      numRecords: expect.any(Number),
      tightBounds: false,
    });
  });
});
