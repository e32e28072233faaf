/**
 * The OPTIMIZE commit as planned (pure, no DuckDB, no storage): a rewrite that keeps the rows,
 * so every action says dataChange=false; removes that match the live files exactly; a read set of
 * exactly the rewritten files and their partitions; Spark's OPTIMIZE metrics.
 */
import { describe, expect, it } from 'vitest';
import type {
  AddFile,
  DeletionVectorDescriptor,
  PartitionValues,
  RemoveFile,
} from '../../src/delta/actions.js';
import type { LiveFile } from '../../src/delta/snapshot.js';
import type { WrittenFile } from '../../src/engine/written-file.js';
import {
  optimizeCommitRequest,
  sum,
  uniquePartitions,
  type RewrittenBin,
} from '../../src/maintenance/optimize-commit.js';

const NOW = 1_760_000_000_000;

function live(
  path: string,
  size: number,
  partitionValues: PartitionValues,
  extra: Partial<LiveFile> = {},
): LiveFile {
  return {
    path,
    partitionValues,
    size,
    modificationTime: 1,
    dataChange: true,
    stats: '{"numRecords":3}',
    parsedStats: { numRecords: 3 },
    ...extra,
  };
}

function written(
  relativePath: string,
  size: number,
  partitionValues: PartitionValues,
): WrittenFile {
  return {
    logPath: relativePath,
    relativePath,
    localPath: `/spool/${relativePath}`,
    partitionValues,
    size,
    stats: { numRecords: 6 },
  };
}

function bin(
  partitionValues: PartitionValues,
  files: LiveFile[],
  added: WrittenFile[],
): RewrittenBin {
  return { bin: { partitionValues, files, bytes: sum(files) }, added };
}

const DV: DeletionVectorDescriptor = {
  storageType: 'u',
  pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^',
  offset: 4,
  sizeInBytes: 40,
  cardinality: 2,
};
const A = { day: '2025-03-01' };
const B = { day: '2025-03-02' };

/** Two bins in partition A (one of them holding a file with a DV and tags), one in B. */
function rewritten(): RewrittenBin[] {
  return [
    bin(
      A,
      [live('day=2025-03-01/a1.parquet', 100, A), live('day=2025-03-01/a2.parquet', 200, A)],
      [written('day=2025-03-01/c1.parquet', 250, A)],
    ),
    bin(
      B,
      [live('day=2025-03-02/b1.parquet', 50, B), live('day=2025-03-02/b2.parquet', 70, B)],
      [written('day=2025-03-02/c2.parquet', 110, B)],
    ),
    bin(
      A,
      [
        live('day=2025-03-01/a3.parquet', 30, A, {
          deletionVector: DV,
          tags: { origin: 'spark' },
          baseRowId: 10,
          defaultRowCommitVersion: 2,
        }),
        live('day=2025-03-01/a4.parquet', 40, A),
      ],
      [written('day=2025-03-01/c3.parquet', 60, A), written('day=2025-03-01/c4.parquet', 5, A)],
    ),
  ];
}

const removes = (actions: ReturnType<typeof optimizeCommitRequest>['actions']): RemoveFile[] =>
  actions.flatMap((a) => ('remove' in a ? [a.remove] : []));
const adds = (actions: ReturnType<typeof optimizeCommitRequest>['actions']): AddFile[] =>
  actions.flatMap((a) => ('add' in a ? [a.add] : []));

describe('optimizeCommitRequest', () => {
  it('marks every action dataChange=false: readers and streams see no new data', () => {
    const { actions } = optimizeCommitRequest({ readVersion: 4, rewritten: rewritten(), now: NOW });
    expect(actions).toHaveLength(10);
    for (const action of actions) {
      const file = 'add' in action ? action.add : 'remove' in action ? action.remove : undefined;
      expect(file, JSON.stringify(action)).toBeDefined();
      expect(file!.dataChange).toBe(false);
    }
  });

  it('removes every rewritten file before adding the replacements, bins in order', () => {
    const { actions } = optimizeCommitRequest({ readVersion: 4, rewritten: rewritten(), now: NOW });
    expect(
      actions.map((a) =>
        'remove' in a ? `-${a.remove.path}` : 'add' in a ? `+${a.add.path}` : '?',
      ),
    ).toEqual([
      '-day=2025-03-01/a1.parquet',
      '-day=2025-03-01/a2.parquet',
      '-day=2025-03-02/b1.parquet',
      '-day=2025-03-02/b2.parquet',
      '-day=2025-03-01/a3.parquet',
      '-day=2025-03-01/a4.parquet',
      '+day=2025-03-01/c1.parquet',
      '+day=2025-03-02/c2.parquet',
      '+day=2025-03-01/c3.parquet',
      '+day=2025-03-01/c4.parquet',
    ]);
  });

  it("stamps each remove with the live file's size, partition values, stats, tags, deletion vector and row tracking", () => {
    const { actions } = optimizeCommitRequest({ readVersion: 4, rewritten: rewritten(), now: NOW });
    const withDv = removes(actions).find((r) => r.path === 'day=2025-03-01/a3.parquet');
    expect(withDv).toEqual({
      path: 'day=2025-03-01/a3.parquet',
      deletionTimestamp: NOW,
      dataChange: false,
      extendedFileMetadata: true,
      partitionValues: A,
      size: 30,
      stats: '{"numRecords":3}',
      tags: { origin: 'spark' },
      deletionVector: DV,
      baseRowId: 10,
      defaultRowCommitVersion: 2,
    });
    const plain = removes(actions).find((r) => r.path === 'day=2025-03-02/b1.parquet');
    expect(plain).toEqual({
      path: 'day=2025-03-02/b1.parquet',
      deletionTimestamp: NOW,
      dataChange: false,
      extendedFileMetadata: true,
      partitionValues: B,
      size: 50,
      stats: '{"numRecords":3}',
    });
  });

  it('adds each new file at its log path with its partition values, size, stats and the commit time', () => {
    const { actions } = optimizeCommitRequest({ readVersion: 4, rewritten: rewritten(), now: NOW });
    expect(adds(actions)[1]).toEqual({
      path: 'day=2025-03-02/c2.parquet',
      partitionValues: B,
      size: 110,
      modificationTime: NOW,
      dataChange: false,
      stats: '{"numRecords":6}',
    });
  });

  it('reads exactly the rewritten files and their partitions (each once), at the planned version, and no app ids', () => {
    const request = optimizeCommitRequest({ readVersion: 4, rewritten: rewritten(), now: NOW });
    expect(request.read).toEqual({
      readVersion: 4,
      partitions: [A, B],
      files: [
        'day=2025-03-01/a1.parquet',
        'day=2025-03-01/a2.parquet',
        'day=2025-03-02/b1.parquet',
        'day=2025-03-02/b2.parquet',
        'day=2025-03-01/a3.parquet',
        'day=2025-03-01/a4.parquet',
      ],
      appIds: [],
    });
    expect(request.operation).toBe('OPTIMIZE');
    expect(request.isBlindAppend).toBe(false);
    expect(request.operationParameters).toEqual({ predicate: [], zOrderBy: [] });
  });

  it('reads the one empty partition of an unpartitioned table, not the whole table', () => {
    const request = optimizeCommitRequest({
      readVersion: 0,
      rewritten: [
        bin(
          {},
          [live('x.parquet', 1, {}), live('y.parquet', 2, {})],
          [written('z.parquet', 3, {})],
        ),
      ],
      now: NOW,
    });
    expect(request.read.partitions).toEqual([{}]);
  });

  it("reports Spark's metrics as strings: files and bytes removed and added, and percentiles of the added sizes", () => {
    const { operationMetrics } = optimizeCommitRequest({
      readVersion: 4,
      rewritten: rewritten(),
      now: NOW,
    });
    // Added sizes sorted: 5, 60, 110, 250.
    expect(operationMetrics).toEqual({
      numRemovedFiles: '6',
      numAddedFiles: '4',
      numRemovedBytes: '490',
      numAddedBytes: '425',
      minFileSize: '5',
      p25FileSize: '60',
      p50FileSize: '110',
      p75FileSize: '250',
      maxFileSize: '250',
      // One of the compacted files had a deletion vector: its deleted rows are purged.
      numDeletionVectorsRemoved: '1',
    });
  });

  it('picks percentiles by rank floor(q × n) of the sorted added sizes', () => {
    const five = [70, 10, 50, 30, 90].map((size, i) => written(`c${i}.parquet`, size, A));
    const { operationMetrics } = optimizeCommitRequest({
      readVersion: 1,
      rewritten: [bin(A, [live('a', 1, A), live('b', 1, A)], five)],
      now: NOW,
    });
    // Sorted: 10, 30, 50, 70, 90; ranks 1 (1.25), 2 (2.5), 3 (3.75).
    expect(operationMetrics).toMatchObject({
      minFileSize: '10',
      p25FileSize: '30',
      p50FileSize: '50',
      p75FileSize: '70',
      maxFileSize: '90',
    });
  });

  it('reports one added file as every percentile, and zeros when nothing was rewritten', () => {
    const one = optimizeCommitRequest({
      readVersion: 1,
      rewritten: [bin(A, [live('a', 4, A), live('b', 6, A)], [written('c', 9, A)])],
      now: NOW,
    });
    expect(one.operationMetrics).toMatchObject({
      minFileSize: '9',
      p25FileSize: '9',
      p50FileSize: '9',
      p75FileSize: '9',
      maxFileSize: '9',
    });
    const none = optimizeCommitRequest({ readVersion: 1, rewritten: [], now: NOW });
    expect(none.actions).toEqual([]);
    expect(none.read).toEqual({ readVersion: 1, partitions: [], files: [], appIds: [] });
    expect(Object.values(none.operationMetrics!)).toEqual(Array(10).fill('0'));
  });
});

describe('uniquePartitions', () => {
  it('keeps the first of equal value sets, whatever the order of their columns', () => {
    const first = { day: '2025-03-01', region: 'eu' };
    expect(
      uniquePartitions([
        first,
        { region: 'eu', day: '2025-03-01' },
        { day: '2025-03-01', region: 'us' },
        first,
      ]),
    ).toEqual([first, { day: '2025-03-01', region: 'us' }]);
    expect(uniquePartitions([first, { region: 'eu', day: '2025-03-01' }])[0]).toBe(first);
  });

  it('tells a null value from the string "null"', () => {
    expect(uniquePartitions([{ p: null }, { p: 'null' }, { p: null }])).toEqual([
      { p: null },
      { p: 'null' },
    ]);
  });
});

describe('sum', () => {
  it('adds the sizes of the files, 0 for none', () => {
    expect(sum([{ size: 3 }, { size: 40 }, { size: 500 }])).toBe(543);
    expect(sum([])).toBe(0);
  });
});
