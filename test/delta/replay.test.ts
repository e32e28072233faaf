/**
 * Reconciliation rules (delta-notes §3) on hand-written action sequences.
 */
import { describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import type { Action, AddFile, DeletionVectorDescriptor } from '../../src/delta/actions.js';
import { SnapshotBuilder } from '../../src/delta/replay.js';

const schema = (...names: string[]) =>
  JSON.stringify({
    type: 'struct',
    fields: names.map((name) => ({ name, type: 'long', nullable: true, metadata: {} })),
  });
const protocol: Action = { protocol: { minReaderVersion: 1, minWriterVersion: 2 } };
const meta = (...names: string[]): Action => ({
  metaData: {
    id: 'm',
    format: { provider: 'parquet', options: {} },
    schemaString: schema(...names),
    partitionColumns: [],
    configuration: {},
  },
});
const add = (path: string, extra: Partial<AddFile> = {}): Action => ({
  add: { path, partitionValues: {}, size: 1, modificationTime: 0, dataChange: true, ...extra },
});
const remove = (path: string, deletionVector?: DeletionVectorDescriptor): Action => ({
  remove: { path, dataChange: true, deletionTimestamp: 1, deletionVector },
});
const dv = (id: string): DeletionVectorDescriptor => ({
  storageType: 'u',
  pathOrInlineDv: id,
  offset: 1,
  sizeInBytes: 10,
  cardinality: 1,
});

describe('SnapshotBuilder', () => {
  it('keys file actions by path and DV id: add(newDV) before remove(oldDV) keeps the file', () => {
    const s = new SnapshotBuilder('t')
      .apply([protocol, meta('id'), add('a.parquet')])
      .apply([add('a.parquet', { deletionVector: dv('one') }), remove('a.parquet')])
      .apply([add('a.parquet', { deletionVector: dv('two') }), remove('a.parquet', dv('one'))])
      .build(2);
    expect(s.files.map((f) => [f.path, f.deletionVector?.pathOrInlineDv])).toEqual([
      ['a.parquet', 'two'],
    ]);
    expect(s.removes).toHaveLength(2);
  });

  it('a re-add replaces stats; a remove then re-add revives the file and clears its remove', () => {
    const s = new SnapshotBuilder('t')
      .apply([protocol, meta('id'), add('b.parquet'), add('a.parquet')])
      .apply([add('a.parquet', { stats: '{"numRecords":3}' })])
      .apply([remove('b.parquet')])
      .apply([add('b.parquet')])
      .build(3);
    expect(s.files.map((f) => f.path)).toEqual(['a.parquet', 'b.parquet']);
    expect(s.files[0]?.parsedStats).toEqual({ numRecords: 3 });
    expect(s.removes).toEqual([]);
  });

  it('the last protocol and metaData win; the newest txn wins even with a lower version', () => {
    const s = new SnapshotBuilder('t')
      .apply([
        protocol,
        meta('a'),
        { txn: { appId: 'job', version: 5 } },
        { txn: { appId: 'other', version: 1 } },
      ])
      .apply([
        {
          protocol: {
            minReaderVersion: 3,
            minWriterVersion: 7,
            readerFeatures: [],
            writerFeatures: [],
          },
        },
        meta('a', 'b'),
      ])
      .apply([{ txn: { appId: 'job', version: 2 } }, { commitInfo: { operation: 'WRITE' } }])
      .build(2);
    expect(s.protocol.minReaderVersion).toBe(3);
    expect(s.schema.fields.map((f) => f.name)).toEqual(['a', 'b']);
    expect(s.txns.get('job')?.version).toBe(2);
    expect(s.txns.get('other')?.version).toBe(1);
  });

  it('domain metadata: newest wins, removed domains leave the snapshot', () => {
    const s = new SnapshotBuilder('t')
      .apply([
        protocol,
        meta('id'),
        { domainMetadata: { domain: 'a', configuration: '1', removed: false } },
      ])
      .apply([{ domainMetadata: { domain: 'b', configuration: '{}', removed: false } }])
      .apply([
        { domainMetadata: { domain: 'a', configuration: '1', removed: true } },
        { domainMetadata: { domain: 'b', configuration: '2', removed: false } },
      ])
      .build(2);
    expect([...s.domains.entries()]).toEqual([
      ['b', { domain: 'b', configuration: '2', removed: false }],
    ]);
  });

  it('continues from an existing snapshot', () => {
    const base = new SnapshotBuilder('t')
      .apply([protocol, meta('id'), add('a.parquet'), add('b.parquet')])
      .build(0);
    const next = SnapshotBuilder.from(base)
      .apply([remove('a.parquet')])
      .build(1);
    expect(next.files.map((f) => f.path)).toEqual(['b.parquet']);
    expect(base.files).toHaveLength(2);
  });

  it('a log without protocol or metaData is a DeltaLogError', () => {
    expect(() => new SnapshotBuilder('t').apply([meta('id')]).build(0)).toThrow(DeltaLogError);
    expect(() => new SnapshotBuilder('t').apply([protocol]).build(0)).toThrow(
      /no metaData action at version 0/,
    );
  });
});
