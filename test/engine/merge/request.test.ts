/**
 * The MERGE commit as planned (pure, no DuckDB, no storage): the actions in the order given, what
 * the commit read (for the conflict checks), and commitInfo's parameters and metrics under
 * Spark's names, as a Delta reader (DESCRIBE HISTORY) sees them.
 */
import { describe, expect, it } from 'vitest';
import type { Action } from '../../../src/delta/actions.js';
import type { LiveFile } from '../../../src/delta/snapshot.js';
import type { MatchSpec } from '../../../src/engine/merge/plan.js';
import {
  mergeMetrics,
  mergeParameters,
  mergeRequest,
  partitionTuples,
  type MergeCommitInput,
} from '../../../src/engine/merge/request.js';
import type { MergeCounts } from '../../../src/engine/merge/results.js';
import type { WrittenFile } from '../../../src/engine/written-file.js';

function live(path: string, size: number, day = '2025-03-01'): LiveFile {
  return {
    path,
    partitionValues: { day },
    size,
    modificationTime: 1,
    dataChange: true,
    parsedStats: null,
  };
}

function written(name: string, size: number, day = '2025-03-01'): WrittenFile {
  const relativePath = `day=${day}/${name}`;
  return {
    logPath: relativePath,
    relativePath,
    localPath: `/spool/${name}`,
    partitionValues: { day },
    size,
    stats: { numRecords: 1 },
  };
}

const COUNTS: MergeCounts = {
  sourceRows: 10,
  inserted: 4,
  updated: 3,
  deleted: 2,
  skippedStale: 1,
  skippedByTombstone: 0,
  unchanged: 0,
  deleteNotFound: 0,
  rowsCopied: 7,
};

const SPEC: MatchSpec = { keys: ['id'], orderBy: 'seq' };

function input(overrides: Partial<MergeCommitInput> = {}): MergeCommitInput {
  const removed = [
    live('day=2025-03-01/old-1.parquet', 1000),
    live('day=2025-03-02/old-2.parquet', 500, '2025-03-02'),
  ];
  const added = [written('new-1.parquet', 800), written('new-2.parquet', 650, '2025-03-02')];
  const actions: Action[] = [
    { remove: { path: removed[0]!.path, dataChange: true } },
    { remove: { path: removed[1]!.path, dataChange: true } },
    {
      add: {
        path: added[0]!.logPath,
        partitionValues: added[0]!.partitionValues,
        size: 800,
        modificationTime: 5,
        dataChange: true,
      },
    },
  ];
  return {
    readVersion: 7,
    spec: SPEC,
    actions,
    added,
    removed,
    // A scanned file need not be rewritten: the read set names every file whose keys were read.
    scanned: [...removed, live('day=2025-03-01/kept.parquet', 300)],
    partitions: [{ day: '2025-03-01' }, { day: '2025-03-02' }],
    appIds: ['tidemark-orders'],
    counts: COUNTS,
    timings: { total: 1234.6, scan: 200.4, rewrite: 99.5 },
    ...overrides,
  };
}

describe('mergeRequest', () => {
  it('carries the actions in the order given, as a MERGE that is not a blind append', () => {
    const given = input();
    const request = mergeRequest(given);
    expect(request.actions).toEqual(given.actions);
    expect(request.operation).toBe('MERGE');
    expect(request.isBlindAppend).toBe(false);
    // A copy: the caller appends its txn and job state to the request, not to its own list.
    request.actions.push({ txn: { appId: 'x', version: 1 } });
    expect(given.actions).toHaveLength(3);
  });

  it('reads the snapshot version, the batch partitions, every scanned file and the app ids', () => {
    const request = mergeRequest(input());
    expect(request.read).toEqual({
      readVersion: 7,
      partitions: [{ day: '2025-03-01' }, { day: '2025-03-02' }],
      files: [
        'day=2025-03-01/old-1.parquet',
        'day=2025-03-02/old-2.parquet',
        'day=2025-03-01/kept.parquet',
      ],
      appIds: ['tidemark-orders'],
    });
  });

  it("reads the whole table when the match is not by partition ('all'), and no files when nothing was scanned", () => {
    const request = mergeRequest(
      input({ partitions: 'all', scanned: [], removed: [], appIds: [] }),
    );
    expect(request.read).toEqual({ readVersion: 7, partitions: 'all', files: [], appIds: [] });
  });

  it('puts the parameters and metrics of the same input into commitInfo', () => {
    const given = input({ deleteWhen: "status = 'cancelled'" });
    const request = mergeRequest(given);
    expect(request.operationParameters).toEqual(mergeParameters(SPEC, "status = 'cancelled'"));
    expect(request.operationMetrics).toEqual(mergeMetrics(given));
  });
});

describe('mergeParameters', () => {
  it('without deleteWhen: a join on the keys, an update when not older, an insert otherwise', () => {
    expect(mergeParameters(SPEC)).toEqual({
      predicate: ['target."id" = source."id"'],
      matchedPredicates: [{ predicate: 'source."seq" >= target."seq"', actionType: 'update' }],
      notMatchedPredicates: [{ actionType: 'insert' }],
      notMatchedBySourcePredicates: [],
    });
  });

  it('with deleteWhen: a delete clause before the update, and inserts only of rows that are not deletes', () => {
    expect(mergeParameters(SPEC, "op = 'D'")).toEqual({
      predicate: ['target."id" = source."id"'],
      matchedPredicates: [
        { predicate: `(op = 'D') AND source."seq" >= target."seq"`, actionType: 'delete' },
        { predicate: 'source."seq" >= target."seq"', actionType: 'update' },
      ],
      notMatchedPredicates: [{ predicate: `NOT (op = 'D')`, actionType: 'insert' }],
      notMatchedBySourcePredicates: [],
    });
  });

  it('quotes every column with ident, doubling a quote in a name', () => {
    const params = mergeParameters({ keys: ['a"b', 'order id'], orderBy: 'x"y' });
    expect(params['predicate']).toEqual([
      'target."a""b" = source."a""b" AND target."order id" = source."order id"',
    ]);
    expect(params['matchedPredicates']).toEqual([
      { predicate: 'source."x""y" >= target."x""y"', actionType: 'update' },
    ]);
  });

  it('matches on the key columns alone, partition columns or not', () => {
    const params = mergeParameters({ keys: ['day', 'id'], orderBy: 'seq' });
    expect(params['predicate']).toEqual([
      'target."day" = source."day" AND target."id" = source."id"',
    ]);
  });
});

describe('mergeMetrics', () => {
  it("uses Delta's metric names, every value a string", () => {
    const metrics = mergeMetrics(input());
    expect(Object.keys(metrics).sort()).toEqual(
      [
        'numSourceRows',
        'numTargetRowsInserted',
        'numTargetRowsUpdated',
        'numTargetRowsMatchedUpdated',
        'numTargetRowsNotMatchedBySourceUpdated',
        'numTargetRowsDeleted',
        'numTargetRowsMatchedDeleted',
        'numTargetRowsNotMatchedBySourceDeleted',
        'numTargetRowsCopied',
        'numOutputRows',
        'numTargetFilesAdded',
        'numTargetFilesRemoved',
        'numTargetChangeFilesAdded',
        'numTargetChangeFileBytes',
        'numTargetDeletionVectorsAdded',
        'numTargetBytesAdded',
        'numTargetBytesRemoved',
        'executionTimeMs',
        'scanTimeMs',
        'rewriteTimeMs',
      ].sort(),
    );
    for (const value of Object.values(metrics)) expect(typeof value).toBe('string');
  });

  it('counts rows: output = inserted + updated + copied; matched updates and deletes; nothing by source', () => {
    expect(mergeMetrics(input())).toMatchObject({
      numSourceRows: '10',
      numTargetRowsInserted: '4',
      numTargetRowsUpdated: '3',
      numTargetRowsMatchedUpdated: '3',
      numTargetRowsNotMatchedBySourceUpdated: '0',
      numTargetRowsDeleted: '2',
      numTargetRowsMatchedDeleted: '2',
      numTargetRowsNotMatchedBySourceDeleted: '0',
      numTargetRowsCopied: '7',
      numOutputRows: '14',
    });
  });

  it('counts files and bytes added and removed, and rounds the phase timings to whole ms', () => {
    expect(mergeMetrics(input())).toMatchObject({
      numTargetFilesAdded: '2',
      numTargetFilesRemoved: '2',
      numTargetChangeFilesAdded: '0',
      numTargetBytesAdded: '1450',
      numTargetBytesRemoved: '1500',
      executionTimeMs: '1235',
      scanTimeMs: '200',
      rewriteTimeMs: '100',
    });
  });

  it('reports zeros, not NaN or empty strings, for a MERGE that added and removed nothing', () => {
    const zero: MergeCounts = { ...COUNTS, inserted: 0, updated: 0, deleted: 0, rowsCopied: 0 };
    const metrics = mergeMetrics({
      added: [],
      removed: [],
      counts: zero,
      timings: { total: 0, scan: 0, rewrite: 0 },
    });
    expect(metrics).toMatchObject({
      numOutputRows: '0',
      numTargetFilesAdded: '0',
      numTargetBytesAdded: '0',
      numTargetBytesRemoved: '0',
    });
  });
});

describe('partitionTuples', () => {
  it('maps the p0, p1, … columns of each row to the partition columns, in order', () => {
    expect(
      partitionTuples(
        ['day', 'region'],
        [
          { p0: '2025-03-01', p1: 'eu' },
          { p0: '2025-03-02', p1: 'us' },
        ],
      ),
    ).toEqual([
      { day: '2025-03-01', region: 'eu' },
      { day: '2025-03-02', region: 'us' },
    ]);
  });

  it('turns SQL NULL (null or a missing column) into null, and never into the string "null"', () => {
    expect(partitionTuples(['day', 'region'], [{ p0: null }, { p1: 'eu' }])).toEqual([
      { day: null, region: null },
      { day: null, region: 'eu' },
    ]);
  });

  it('keeps the empty string and the string "null" as they are, and turns numbers into their text', () => {
    expect(partitionTuples(['a', 'b', 'c'], [{ p0: '', p1: 'null', p2: 42 }])).toEqual([
      { a: '', b: 'null', c: '42' },
    ]);
  });

  it('gives no tuples for no rows, and an empty tuple per row for an unpartitioned table', () => {
    expect(partitionTuples(['day'], [])).toEqual([]);
    expect(partitionTuples([], [{}, {}])).toEqual([{}, {}]);
  });
});
