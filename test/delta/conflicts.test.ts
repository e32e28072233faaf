import { describe, expect, it } from 'vitest';
import type { Action, AddFile, PartitionValues } from '../../src/delta/actions.js';
import { checkConflicts, type OurTransaction } from '../../src/delta/conflicts.js';
import type { ReadSet } from '../../src/delta/transaction.js';

const add = (path: string, partitionValues: PartitionValues = {}, dataChange = true): Action => ({
  add: { path, partitionValues, size: 100, modificationTime: 1, dataChange } satisfies AddFile,
});
const remove = (path: string, dataChange = true): Action => ({
  remove: { path, dataChange, deletionTimestamp: 1 },
});
const info = (isBlindAppend: boolean): Action => ({
  commitInfo: { operation: 'WRITE', isBlindAppend },
});
const txn = (appId: string, version: number): Action => ({ txn: { appId, version } });

const blindRead: ReadSet = { readVersion: 3, partitions: [], files: [], appIds: [] };
const ours = (actions: Action[], over: Partial<OurTransaction> = {}): OurTransaction => ({
  actions,
  isBlindAppend: false,
  changesMetadata: false,
  changesProtocol: false,
  ...over,
});
const winner = (actions: Action[]) => ({ version: 4, actions });

describe('checkConflicts: no conflict', () => {
  it('blind append vs blind append', () => {
    const c = checkConflicts(
      blindRead,
      ours([add('a.parquet')], { isBlindAppend: true }),
      winner([info(true), add('b.parquet')]),
    );
    expect(c).toBeNull();
  });

  it('merge on partition A vs a (non-blind) write into partition B', () => {
    const read: ReadSet = {
      readVersion: 3,
      partitions: [{ p: 'A' }],
      files: ['p=A/1.parquet'],
      appIds: [],
    };
    const ourActions = [remove('p=A/1.parquet'), add('p=A/2.parquet', { p: 'A' })];
    const w = winner([info(false), remove('p=B/1.parquet'), add('p=B/2.parquet', { p: 'B' })]);
    expect(checkConflicts(read, ours(ourActions), w)).toBeNull();
  });

  it('merge reading the whole table vs a blind append (WriteSerializable)', () => {
    const read: ReadSet = { readVersion: 3, partitions: 'all', files: ['1.parquet'], appIds: [] };
    const w = winner([info(true), add('new.parquet')]);
    expect(checkConflicts(read, ours([remove('1.parquet'), add('2.parquet')]), w)).toBeNull();
  });

  it('optimize (dataChange=false only) vs a concurrent append into the partitions it read', () => {
    const read: ReadSet = {
      readVersion: 3,
      partitions: 'all',
      files: ['1.parquet', '2.parquet'],
      appIds: [],
    };
    const optimize = [
      remove('1.parquet', false),
      remove('2.parquet', false),
      add('big.parquet', {}, false),
    ];
    expect(
      checkConflicts(read, ours(optimize), winner([info(false), add('new.parquet')])),
    ).toBeNull();
  });

  it('a winner optimize (dataChange=false adds) does not count as a concurrent append', () => {
    const read: ReadSet = {
      readVersion: 3,
      partitions: [{ p: 'A' }],
      files: ['p=A/1.parquet'],
      appIds: [],
    };
    const w = winner([
      info(false),
      remove('p=A/0.parquet', false),
      add('p=A/big.parquet', { p: 'A' }, false),
    ]);
    expect(
      checkConflicts(read, ours([remove('p=A/1.parquet'), add('p=A/3.parquet', { p: 'A' })]), w),
    ).toBeNull();
  });

  it('a txn for a different appId', () => {
    const read: ReadSet = { ...blindRead, appIds: ['job-a'] };
    expect(
      checkConflicts(read, ours([txn('job-a', 2)]), winner([info(true), txn('job-b', 9)])),
    ).toBeNull();
  });
});

describe('checkConflicts: conflicts', () => {
  it('winner changed the protocol => ProtocolChanged', () => {
    const w = winner([{ protocol: { minReaderVersion: 1, minWriterVersion: 3 } }]);
    expect(checkConflicts(blindRead, ours([add('a')]), w)?.type).toBe('ProtocolChanged');
    const both = checkConflicts(blindRead, ours([add('a')], { changesProtocol: true }), w);
    expect(both?.message).toContain('both transactions change the protocol');
  });

  it('winner changed metaData => MetadataChanged, even for a blind append', () => {
    const meta: Action = {
      metaData: {
        id: 'x',
        format: { provider: 'parquet' },
        schemaString: '{}',
        partitionColumns: [],
        configuration: {},
      },
    };
    const c = checkConflicts(blindRead, ours([add('a')], { isBlindAppend: true }), winner([meta]));
    expect(c).toMatchObject({ type: 'MetadataChanged', winnerVersion: 4 });
  });

  it('winner wrote a txn for an appId we read => ConcurrentTransaction naming the appId', () => {
    const read: ReadSet = { ...blindRead, appIds: ['job-a'] };
    const c = checkConflicts(
      read,
      ours([add('a')]),
      winner([info(true), txn('job-a', 7), add('b')]),
    );
    expect(c).toMatchObject({ type: 'ConcurrentTransaction', subject: 'job-a' });
  });

  it('a txn for an appId we write counts as read', () => {
    const c = checkConflicts(
      blindRead,
      ours([txn('job-a', 8), add('a')]),
      winner([txn('job-a', 8), add('b')]),
    );
    expect(c?.type).toBe('ConcurrentTransaction');
  });

  it('non-blind add into a partition we read => ConcurrentAppend', () => {
    const read: ReadSet = { readVersion: 3, partitions: [{ p: 'A' }], files: [], appIds: [] };
    const c = checkConflicts(
      read,
      ours([add('p=A/x', { p: 'A' })]),
      winner([info(false), add('p=A/y', { p: 'A' })]),
    );
    expect(c).toMatchObject({ type: 'ConcurrentAppend', subject: 'p=A/y' });
  });

  it('partition values compare with empty string meaning null', () => {
    const read: ReadSet = { readVersion: 3, partitions: [{ p: null }], files: [], appIds: [] };
    const c = checkConflicts(
      read,
      ours([add('z')]),
      winner([add('p=__HIVE_DEFAULT_PARTITION__/y', { p: '' })]),
    );
    expect(c?.type).toBe('ConcurrentAppend');
  });

  it('a blind append counts when we change metadata', () => {
    const read: ReadSet = { readVersion: 3, partitions: 'all', files: [], appIds: [] };
    const meta: Action = {
      metaData: {
        id: 'x',
        format: { provider: 'parquet' },
        schemaString: '{}',
        partitionColumns: [],
        configuration: {},
      },
    };
    const c = checkConflicts(
      read,
      ours([meta, add('a')], { changesMetadata: true }),
      winner([info(true), add('b')]),
    );
    expect(c?.type).toBe('ConcurrentAppend');
  });

  it('winner removed a file we read => ConcurrentDeleteRead', () => {
    const read: ReadSet = {
      readVersion: 3,
      partitions: [{ p: 'A' }],
      files: ['p=A/1.parquet'],
      appIds: [],
    };
    const c = checkConflicts(
      read,
      ours([add('p=A/2', { p: 'A' })]),
      winner([remove('p=A/1.parquet')]),
    );
    expect(c).toMatchObject({ type: 'ConcurrentDeleteRead', subject: 'p=A/1.parquet' });
  });

  it('having read the whole table, any dataChange remove => ConcurrentDeleteRead', () => {
    const read: ReadSet = { readVersion: 3, partitions: 'all', files: ['1.parquet'], appIds: [] };
    const c = checkConflicts(read, ours([add('2')]), winner([remove('other.parquet')]));
    expect(c?.type).toBe('ConcurrentDeleteRead');
  });

  it('both remove the same file => ConcurrentDeleteDelete (also when the winner was an optimize)', () => {
    const read: ReadSet = { readVersion: 3, partitions: [], files: [], appIds: [] };
    const c = checkConflicts(
      read,
      ours([remove('1.parquet')]),
      winner([remove('1.parquet', false), add('big', {}, false)]),
    );
    expect(c).toMatchObject({ type: 'ConcurrentDeleteDelete', subject: '1.parquet' });
  });

  it('optimize vs a merge that rewrote a file it compacts => ConcurrentDeleteRead', () => {
    const read: ReadSet = {
      readVersion: 3,
      partitions: [],
      files: ['1.parquet', '2.parquet'],
      appIds: [],
    };
    const optimize = [
      remove('1.parquet', false),
      remove('2.parquet', false),
      add('big', {}, false),
    ];
    const c = checkConflicts(
      read,
      ours(optimize),
      winner([info(false), remove('2.parquet'), add('2b')]),
    );
    expect(c?.type).toBe('ConcurrentDeleteRead');
  });

  it('domain metadata written by both => ConcurrentDomainMetadata', () => {
    const dm: Action = {
      domainMetadata: { domain: 'tidemark.watermark', configuration: '{}', removed: false },
    };
    expect(checkConflicts(blindRead, ours([dm]), winner([dm]))?.type).toBe(
      'ConcurrentDomainMetadata',
    );
  });
});
