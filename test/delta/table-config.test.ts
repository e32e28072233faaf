/**
 * A table's configuration: which features its protocol and metadata put in force, for the table a
 * snapshot read and for the table a pending commit leaves behind.
 */
import { describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import type { Metadata, Protocol } from '../../src/delta/actions.js';
import { TableConfig } from '../../src/delta/table-config.js';

function metadata(configuration: Record<string, string> = {}): Metadata {
  const fields = [{ name: 'id', type: 'long', nullable: true, metadata: {} }];
  return {
    id: 'test',
    format: { provider: 'parquet', options: {} },
    schemaString: JSON.stringify({ type: 'struct', fields }),
    partitionColumns: [],
    configuration,
  };
}

const p = (
  r: number,
  w: number,
  readerFeatures?: string[] | null,
  writerFeatures?: string[] | null,
): Protocol => ({
  minReaderVersion: r,
  minWriterVersion: w,
  readerFeatures,
  writerFeatures,
});

const of = (protocol: Protocol, configuration: Record<string, string> = {}) =>
  TableConfig.of(protocol, metadata(configuration));

describe('features in force', () => {
  it('legacy writer versions imply their features; writer 7 lists them, reader features included', () => {
    expect(of(p(1, 1)).writerFeatures).toEqual([]);
    expect(of(p(1, 2)).writerFeatures).toEqual(['appendOnly', 'invariants']);
    expect(of(p(1, 4)).writerFeatures).toEqual([
      'appendOnly',
      'invariants',
      'checkConstraints',
      'changeDataFeed',
      'generatedColumns',
    ]);
    expect(of(p(2, 6)).writerFeatures).toContain('identityColumns');
    expect(of(p(3, 7, ['timestampNtz'], ['appendOnly'])).writerFeatures).toEqual([
      'appendOnly',
      'timestampNtz',
    ]);
  });

  it('column mapping counts only on a protocol that supports it; an unknown mode is a DeltaLogError', () => {
    const mode = { 'delta.columnMapping.mode': 'Name' };
    expect(of(p(2, 5), mode).columnMapping).toBe('name');
    expect(of(p(3, 7, ['columnMapping'], ['columnMapping']), mode).columnMapping).toBe('name');
    expect(of(p(3, 7, ['deletionVectors'], ['deletionVectors']), mode).columnMapping).toBe('none');
    expect(of(p(1, 2), mode).columnMapping).toBe('none');
    expect(() => of(p(2, 5), { 'delta.columnMapping.mode': 'path' }).columnMapping).toThrow(
      DeltaLogError,
    );
  });

  it('a change data feed is recorded while the protocol supports it and delta.enableChangeDataFeed is true (any case)', () => {
    const on = { 'delta.enableChangeDataFeed': 'True' };
    expect(of(p(1, 4), on).recordsChangeData).toBe(true);
    expect(of(p(1, 7, null, ['changeDataFeed']), on).recordsChangeData).toBe(true);
    expect(of(p(1, 4)).recordsChangeData).toBe(false);
    // A stray property on a protocol without the feature is ignored, though it is still what the table asks for.
    expect(of(p(1, 3), on).recordsChangeData).toBe(false);
    expect(of(p(1, 7, null, ['appendOnly']), on).recordsChangeData).toBe(false);
    expect(of(p(1, 3), on).changeDataFeedRequested).toBe(true);
  });

  it('deletion vectors need the feature for readers and writers and the property', () => {
    const on = { 'delta.enableDeletionVectors': 'TRUE' };
    expect(of(p(3, 7, ['deletionVectors'], ['deletionVectors']), on).deletionVectors).toBe(true);
    expect(of(p(3, 7, ['deletionVectors'], ['deletionVectors'])).deletionVectors).toBe(false);
    expect(of(p(1, 7, null, ['deletionVectors']), on).deletionVectors).toBe(false);
    expect(of(p(1, 2), on).deletionVectors).toBe(false);
  });

  it('append-only, in-commit timestamps, V2 checkpoints and row tracking follow the protocol and their properties', () => {
    expect(of(p(1, 2), { 'delta.appendOnly': 'true' }).appendOnly).toBe(true);
    expect(of(p(1, 1), { 'delta.appendOnly': 'true' }).appendOnly).toBe(false);
    expect(
      of(p(1, 7, null, ['inCommitTimestamp']), { 'delta.enableInCommitTimestamps': 'true' })
        .inCommitTimestamps,
    ).toBe(true);
    expect(of(p(1, 7, null, ['inCommitTimestamp'])).inCommitTimestamps).toBe(false);
    expect(of(p(3, 7, ['v2Checkpoint'], ['v2Checkpoint'])).v2Checkpoints).toBe(true);
    expect(of(p(1, 2)).v2Checkpoints).toBe(false);
    const tracked = {
      'delta.enableRowTracking': 'true',
      'delta.rowTracking.materializedRowIdColumnName': 'rid',
      'delta.rowTracking.materializedRowCommitVersionColumnName': 'rver',
    };
    expect(of(p(1, 7, null, ['rowTracking', 'domainMetadata']), tracked).rowTracking).toEqual({
      assignsIds: true,
      materialized: { rowIdColumn: 'rid', versionColumn: 'rver' },
    });
    expect(
      of(p(1, 7, null, ['rowTracking', 'domainMetadata']), {
        ...tracked,
        'delta.rowTrackingSuspended': 'true',
      }).rowTracking,
    ).toEqual({
      assignsIds: false,
      materialized: null,
    });
  });
});

describe('the table after a commit', () => {
  it("takes the commit's protocol and metaData over the base's, and the base's where the commit has none", () => {
    const base = of(p(1, 2));
    const evolved = metadata({ 'delta.appendOnly': 'true' });
    const after = TableConfig.after(base, [{ metaData: evolved }], 'file:///t/');
    expect(after.protocol).toBe(base.protocol);
    expect(after.metadata).toBe(evolved);
    expect(after.appendOnly).toBe(true);
    expect(
      TableConfig.after(base, [{ protocol: p(1, 4) }], 'file:///t/').supports('changeDataFeed'),
    ).toBe(true);
  });

  it('a commit creating a table without protocol or metaData is a DeltaLogError', () => {
    expect(() => TableConfig.after(null, [{ metaData: metadata() }], 'file:///t/')).toThrow(
      DeltaLogError,
    );
  });

  it('taking deletion vectors adds the feature for readers and writers and the property to the same metaData', () => {
    const [protocol, metaData] = of(p(1, 4), { owner: 'x' }).enablingDeletionVectors();
    expect(protocol).toEqual({
      protocol: {
        minReaderVersion: 3,
        minWriterVersion: 7,
        readerFeatures: ['deletionVectors'],
        writerFeatures: [
          'appendOnly',
          'invariants',
          'checkConstraints',
          'changeDataFeed',
          'generatedColumns',
          'deletionVectors',
        ],
      },
    });
    expect(metaData).toMatchObject({
      metaData: { configuration: { owner: 'x', 'delta.enableDeletionVectors': 'true' } },
    });
  });
});
