/**
 * Compaction planning (pure): which files go into which bin, per partition.
 */
import { describe, expect, it } from 'vitest';
import type { LiveFile, Snapshot } from '../../src/delta/snapshot.js';
import {
  packBins,
  partitionEquals,
  planCompaction,
} from '../../src/maintenance/plan-compaction.js';

function file(path: string, size: number, p: string | null = 'a', modificationTime = 1): LiveFile {
  return {
    path,
    partitionValues: { p },
    size,
    modificationTime,
    dataChange: true,
    parsedStats: null,
  };
}

function snapshot(files: LiveFile[]): Snapshot {
  return {
    tableUri: 'file:///t/',
    version: 3,
    protocol: { minReaderVersion: 1, minWriterVersion: 2 },
    metadata: {
      id: 'x',
      format: { provider: 'parquet', options: {} },
      schemaString: '{}',
      partitionColumns: ['p'],
      configuration: {},
    },
    schema: { type: 'struct', fields: [] },
    partitionColumns: ['p'],
    files,
    removes: [],
    txns: new Map(),
    domains: new Map(),
  };
}

const paths = (plan: ReturnType<typeof planCompaction>) =>
  plan.bins.map((b) => b.files.map((f) => f.path));

describe('planCompaction', () => {
  it('bins small files per partition and never mixes partitions', () => {
    const s = snapshot([
      file('a1', 10),
      file('a2', 10),
      file('b1', 10, 'b'),
      file('b2', 10, 'b'),
      file('n1', 10, null),
      file('n2', 10, ''),
    ]);
    const plan = planCompaction(s, { targetFileBytes: 100 });
    expect(paths(plan)).toEqual([
      ['a1', 'a2'],
      ['b1', 'b2'],
      ['n1', 'n2'],
    ]);
    expect(plan.bins.map((b) => b.partitionValues['p'])).toEqual(['a', 'b', null]);
    expect(plan).toMatchObject({ consideredFiles: 6, skippedFiles: 0 });
  });

  it('leaves large files, lone small files and partitions below minFilesPerPartition alone', () => {
    const s = snapshot([
      file('a1', 10),
      file('a2', 90),
      file('b1', 10, 'b'),
      file('c1', 10, 'c'),
      file('c2', 10, 'c'),
      file('c3', 10, 'c'),
    ]);
    expect(paths(planCompaction(s, { targetFileBytes: 100 }))).toEqual([['c1', 'c2', 'c3']]);
    expect(paths(planCompaction(s, { targetFileBytes: 100, minFilesPerPartition: 4 }))).toEqual([]);
    expect(paths(planCompaction(s, { targetFileBytes: 100, smallFileBytes: 95 }))).toEqual([
      ['a1', 'a2'],
      ['c1', 'c2', 'c3'],
    ]);
  });

  it('closes a bin before it would pass the target, in arrival order, and drops one-file bins', () => {
    const s = snapshot([
      file('z', 40, 'a', 1),
      file('y', 40, 'a', 2),
      file('x', 40, 'a', 3),
      file('w', 40, 'a', 4),
      file('v', 40, 'a', 5),
    ]);
    expect(paths(planCompaction(s, { targetFileBytes: 100, smallFileBytes: 50 }))).toEqual([
      ['z', 'y'],
      ['x', 'w'],
    ]);
    expect(packBins(s.files, 100).map((b) => b.bytes)).toEqual([80, 80, 40]);
  });

  it('leaves out the partitions the filter excludes', () => {
    const s = snapshot([file('a1', 10), file('a2', 10), file('b1', 10, 'b'), file('b2', 10, 'b')]);
    const plan = planCompaction(s, {
      targetFileBytes: 100,
      partitionFilter: partitionEquals({ p: 'a' }),
    });
    expect(paths(plan)).toEqual([['a1', 'a2']]);
    expect(plan).toMatchObject({ consideredFiles: 2, skippedFiles: 0 });
  });
});

describe('planCompaction purges deletion vectors', () => {
  const withDv = (f: LiveFile, cardinality: number, rows: number): LiveFile => ({
    ...f,
    parsedStats: { numRecords: rows },
    deletionVector: {
      storageType: 'u',
      pathOrInlineDv: 'ab'.padEnd(20, 'x'),
      offset: 1,
      sizeInBytes: 30,
      cardinality,
    },
  });

  it('a small file whose DV deletes little is compacted with the others (the scan leaves its deleted rows out)', () => {
    const s = snapshot([file('a1', 10), file('a2', 10), withDv(file('a3', 10), 1, 100)]);
    expect(paths(planCompaction(s, { targetFileBytes: 100 }))).toEqual([['a1', 'a2', 'a3']]);
  });

  it('a file whose DV deletes more than 5% of its rows is rewritten, even large and alone', () => {
    const s = snapshot([
      file('a1', 1000),
      withDv(file('a2', 1000), 10, 100),
      withDv(file('b1', 1000, 'b'), 5, 100),
    ]);
    const plan = planCompaction(s, { targetFileBytes: 100 });
    expect(paths(plan)).toEqual([['a2']]);
    expect(plan).toMatchObject({ consideredFiles: 3, skippedFiles: 2 });
    expect(paths(planCompaction(s, { targetFileBytes: 100, maxDeletedShare: 0.01 }))).toEqual([
      ['a2'],
      ['b1'],
    ]);
  });

  it('purge rewrites every file with a DV; a DV file of unknown row count is purged too', () => {
    const noRows = { ...withDv(file('c1', 1000, 'c'), 1, 100), parsedStats: null };
    const s = snapshot([file('a1', 1000), withDv(file('a2', 1000), 1, 100), noRows]);
    expect(paths(planCompaction(s, { targetFileBytes: 100 }))).toEqual([['c1']]);
    expect(paths(planCompaction(s, { targetFileBytes: 100, purge: true }))).toEqual([
      ['a2'],
      ['c1'],
    ]);
  });
});
