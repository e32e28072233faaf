/**
 * Conflict checks at key granularity: a MERGE that read keys within bounds does not conflict
 * with a winner that only added files whose statistics lie outside them, nor with one that
 * removed files it did not read; anything the statistics cannot prove still conflicts.
 */
import { describe, expect, it } from 'vitest';
import type { Action, AddFile, PartitionValues } from '../../src/delta/actions.js';
import { checkConflicts, type OurTransaction } from '../../src/delta/conflicts.js';
import { mayHoldKeys, type KeyBound } from '../../src/delta/key-bounds.js';
import type { ReadSet } from '../../src/delta/transaction.js';

const stats = (min: unknown, max: unknown, column = 'id') =>
  JSON.stringify({
    numRecords: 10,
    minValues: { [column]: min },
    maxValues: { [column]: max },
    nullCount: { [column]: 0 },
  });
const addWith = (
  path: string,
  statsText: string | undefined,
  partitionValues: PartitionValues = {},
): Action => ({
  add: {
    path,
    partitionValues,
    size: 100,
    modificationTime: 1,
    dataChange: true,
    ...(statsText === undefined ? {} : { stats: statsText }),
  } satisfies AddFile,
});
const remove = (path: string): Action => ({
  remove: { path, dataChange: true, deletionTimestamp: 1 },
});
const mergeInfo: Action = { commitInfo: { operation: 'MERGE', isBlindAppend: false } };
const ours: OurTransaction = {
  actions: [addWith('mine', undefined)],
  isBlindAppend: false,
  changesMetadata: false,
  changesProtocol: false,
};
const winner = (actions: Action[]) => ({ version: 8, actions: [mergeInfo, ...actions] });
const longIds = (min: number | string, max: number | string): KeyBound[] => [
  { path: ['id'], type: 'long', min: String(min), max: String(max) },
];

describe('mayHoldKeys', () => {
  it('integers: outside on either side excludes; overlap, touching ends, or exact text beyond 2^53 compare exactly', () => {
    const b = longIds(100, 200);
    expect(mayHoldKeys({ stats: stats(201, 300) }, b)).toBe(false);
    expect(mayHoldKeys({ stats: stats(1, 99) }, b)).toBe(false);
    expect(mayHoldKeys({ stats: stats(200, 300) }, b)).toBe(true);
    expect(mayHoldKeys({ stats: stats(1, 100) }, b)).toBe(true);
    expect(mayHoldKeys({ stats: stats(150, 160) }, b)).toBe(true);
    const big = longIds('9007199254740993', '9007199254740995');
    expect(
      mayHoldKeys(
        {
          stats:
            '{"numRecords":1,"minValues":{"id":9007199254740996},"maxValues":{"id":9007199254740999}}',
        },
        big,
      ),
    ).toBe(false);
    expect(
      mayHoldKeys(
        {
          stats:
            '{"numRecords":1,"minValues":{"id":9007199254740995},"maxValues":{"id":9007199254740999}}',
        },
        big,
      ),
    ).toBe(true);
  });

  it('no stats, a missing bound, or no bounds at all: the file may hold the keys', () => {
    const b = longIds(100, 200);
    expect(mayHoldKeys({}, b)).toBe(true);
    expect(mayHoldKeys({ stats: '{"numRecords":3}' }, b)).toBe(true);
    expect(
      mayHoldKeys({ stats: JSON.stringify({ numRecords: 3, minValues: { id: 500 } }) }, b),
    ).toBe(false);
    expect(
      mayHoldKeys({ stats: JSON.stringify({ numRecords: 3, maxValues: { id: 150 } }) }, b),
    ).toBe(true);
    expect(mayHoldKeys({ stats: stats(500, 600) }, undefined)).toBe(true);
    expect(mayHoldKeys({ stats: stats(500, 600) }, [])).toBe(true);
  });

  it('every bound must overlap: one disjoint key column excludes the file', () => {
    const b: KeyBound[] = [
      ...longIds(1, 10),
      { path: ['region'], type: 'string', min: 'eu', max: 'eu' },
    ];
    const s = (region: [string, string]) =>
      JSON.stringify({
        numRecords: 1,
        minValues: { id: 5, region: region[0] },
        maxValues: { id: 6, region: region[1] },
      });
    expect(mayHoldKeys({ stats: s(['us', 'us']) }, b)).toBe(false);
    expect(mayHoldKeys({ stats: s(['ap', 'us']) }, b)).toBe(true);
  });

  it('strings in UTF-8 byte order; a max of 32+ characters may be cut, so it never excludes', () => {
    const b: KeyBound[] = [{ path: ['k'], type: 'string', min: 'm', max: 'n' }];
    expect(mayHoldKeys({ stats: stats('a', 'l', 'k') }, b)).toBe(false);
    expect(mayHoldKeys({ stats: stats('o', 'z', 'k') }, b)).toBe(false);
    expect(mayHoldKeys({ stats: stats('a', 'a'.repeat(32), 'k') }, b)).toBe(true);
    // 'é' (C3 A9) sorts after 'z' (7A) by bytes
    expect(
      mayHoldKeys({ stats: stats('é', 'éz', 'k') }, [
        { path: ['k'], type: 'string', min: 'a', max: 'z' },
      ]),
    ).toBe(false);
  });

  it('dates as text; timestamps in ms with the file max widened by 1 ms; a zone-less timestamp_ntz is UTC', () => {
    expect(
      mayHoldKeys({ stats: stats('2026-01-05', '2026-01-09', 'd') }, [
        { path: ['d'], type: 'date', min: '2026-01-01', max: '2026-01-04' },
      ]),
    ).toBe(false);
    expect(
      mayHoldKeys({ stats: stats('2026-01-04', '2026-01-09', 'd') }, [
        { path: ['d'], type: 'date', min: '2026-01-01', max: '2026-01-04' },
      ]),
    ).toBe(true);
    const at = (iso: string) => Date.parse(iso);
    const ts: KeyBound[] = [
      {
        path: ['t'],
        type: 'timestamp',
        min: at('2026-01-01T00:00:00.002Z'),
        max: at('2026-01-01T00:00:01Z'),
      },
    ];
    expect(
      mayHoldKeys(
        { stats: stats('2025-12-31T00:00:00.000Z', '2026-01-01T00:00:00.001Z', 't') },
        ts,
      ),
    ).toBe(true);
    expect(
      mayHoldKeys(
        { stats: stats('2025-12-31T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 't') },
        ts,
      ),
    ).toBe(false);
    const ntz: KeyBound[] = [
      {
        path: ['t'],
        type: 'timestamp_ntz',
        min: at('2026-01-01T10:00:00Z'),
        max: at('2026-01-01T11:00:00Z'),
      },
    ];
    expect(
      mayHoldKeys({ stats: stats('2026-01-01T12:00:00.000', '2026-01-01T13:00:00.000', 't') }, ntz),
    ).toBe(false);
  });

  it('types whose statistics do not order like the values never exclude', () => {
    expect(
      mayHoldKeys({ stats: stats(5.5, 6.5, 'x') }, [
        { path: ['x'], type: 'double', min: '1', max: '2' },
      ]),
    ).toBe(true);
    expect(
      mayHoldKeys({ stats: stats('5.50', '6.50', 'x') }, [
        { path: ['x'], type: 'decimal(10,2)', min: '1.00', max: '2.00' },
      ]),
    ).toBe(true);
  });
});

describe('checkConflicts with key bounds', () => {
  const wholeTable = (keyBounds?: KeyBound[]): ReadSet => ({
    readVersion: 7,
    partitions: 'all',
    files: ['a.parquet'],
    appIds: ['tidemark.job.eu'],
    ...(keyBounds ? { keyBounds } : {}),
  });

  it('unpartitioned MERGE: a concurrent job adding files of other keys does not conflict; overlapping keys do', () => {
    expect(
      checkConflicts(
        wholeTable(longIds(1, 1000)),
        ours,
        winner([addWith('us-1', stats(5000, 6000))]),
      ),
    ).toBeNull();
    expect(
      checkConflicts(
        wholeTable(longIds(1, 1000)),
        ours,
        winner([addWith('us-1', stats(900, 6000))]),
      ),
    ).toMatchObject({ type: 'ConcurrentAppend', subject: 'us-1' });
    // Without bounds, or a file without stats: the whole table was read.
    expect(
      checkConflicts(wholeTable(), ours, winner([addWith('us-1', stats(5000, 6000))]))?.type,
    ).toBe('ConcurrentAppend');
    expect(
      checkConflicts(wholeTable(longIds(1, 1000)), ours, winner([addWith('us-1', undefined)]))
        ?.type,
    ).toBe('ConcurrentAppend');
  });

  it('a winner rewriting a file this MERGE did not read passes; removing one it read conflicts', () => {
    const rewrite = [remove('b.parquet'), addWith('b2.parquet', stats(5000, 6000))];
    expect(checkConflicts(wholeTable(longIds(1, 1000)), ours, winner(rewrite))).toBeNull();
    expect(checkConflicts(wholeTable(), ours, winner(rewrite))?.type).toBe('ConcurrentAppend');
    expect(checkConflicts(wholeTable(), ours, winner([remove('b.parquet')]))?.type).toBe(
      'ConcurrentDeleteRead',
    );
    expect(
      checkConflicts(wholeTable(longIds(1, 1000)), ours, winner([remove('b.parquet')])),
    ).toBeNull();
    expect(
      checkConflicts(wholeTable(longIds(1, 1000)), ours, winner([remove('a.parquet')])),
    ).toMatchObject({ type: 'ConcurrentDeleteRead', subject: 'a.parquet' });
  });

  it('partitioned: bounds refine within a partition read; other partitions never conflict', () => {
    const read: ReadSet = {
      readVersion: 7,
      partitions: [{ day: '2026-01-01' }],
      files: [],
      appIds: [],
      keyBounds: longIds(1, 1000),
    };
    expect(
      checkConflicts(read, ours, winner([addWith('x', stats(5000, 6000), { day: '2026-01-01' })])),
    ).toBeNull();
    expect(
      checkConflicts(read, ours, winner([addWith('x', stats(10, 20), { day: '2026-01-01' })]))
        ?.type,
    ).toBe('ConcurrentAppend');
    expect(
      checkConflicts(read, ours, winner([addWith('x', stats(10, 20), { day: '2026-01-02' })])),
    ).toBeNull();
  });

  it('bounds never hide state conflicts: the same job state (domain) still conflicts', () => {
    const dm: Action = {
      domainMetadata: { domain: 'tidemark.job.eu', configuration: '{}', removed: false },
    };
    const mine: OurTransaction = { ...ours, actions: [...ours.actions, dm] };
    expect(
      checkConflicts(
        wholeTable(longIds(1, 1000)),
        mine,
        winner([dm, addWith('far', stats(5000, 6000))]),
      )?.type,
    ).toBe('ConcurrentDomainMetadata');
  });
});
