/**
 * Reader and writer gates: legacy protocol versions imply features, reader 3 / writer 7 list
 * them, and every refusal names the feature.
 */
import { describe, expect, it } from 'vitest';
import { UnsupportedFeatureError } from '../../src/errors.js';
import type { Metadata, Protocol } from '../../src/delta/actions.js';
import { assertReadable, assertWritable } from '../../src/delta/features.js';

function metadata(
  opts: {
    configuration?: Record<string, string>;
    fieldMetadata?: Record<string, unknown>;
    idMetadata?: Record<string, unknown>;
    type?: unknown;
  } = {},
): Metadata {
  const fields = [
    { name: 'id', type: 'long', nullable: true, metadata: opts.idMetadata ?? {} },
    { name: 'v', type: opts.type ?? 'string', nullable: true, metadata: opts.fieldMetadata ?? {} },
  ];
  return {
    id: 'test',
    format: { provider: 'parquet', options: {} },
    schemaString: JSON.stringify({ type: 'struct', fields }),
    partitionColumns: [],
    configuration: opts.configuration ?? {},
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

/** The feature named by the refusal, or null when accepted. */
function refusal(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(UnsupportedFeatureError);
    return (err as UnsupportedFeatureError).feature;
  }
}
const readRefusal = (protocol: Protocol, m = metadata()) =>
  refusal(() => assertReadable(protocol, m, 'file:///t/'));
const writeRefusal = (protocol: Protocol, m = metadata()) =>
  refusal(() => assertWritable(protocol, m, 'file:///t/'));

describe('reader gate', () => {
  it('accepts reader 1, and reader 3 with null, empty or supported feature lists', () => {
    expect(readRefusal(p(1, 2))).toBeNull();
    expect(readRefusal(p(3, 7, null, null))).toBeNull();
    expect(readRefusal(p(3, 7, [], ['appendOnly']))).toBeNull();
    expect(readRefusal(p(3, 7, ['timestampNtz'], ['timestampNtz']))).toBeNull();
    // Writer-only features listed as reader features ask nothing of a reader.
    expect(readRefusal(p(3, 7, ['appendOnly', 'vacuumProtocolCheck'], []))).toBeNull();
  });

  it('reader 2 means column mapping: modes none, name and id are read when every field is mapped', () => {
    const mapped = { 'delta.columnMapping.id': 2, 'delta.columnMapping.physicalName': 'col-v' };
    const mappedMetadata = (mode: string) =>
      metadata({
        configuration: { 'delta.columnMapping.mode': mode },
        fieldMetadata: mapped,
        idMetadata: { 'delta.columnMapping.id': 1, 'delta.columnMapping.physicalName': 'col-id' },
      });
    expect(readRefusal(p(2, 5))).toBeNull();
    expect(
      readRefusal(p(2, 5), metadata({ configuration: { 'delta.columnMapping.mode': 'none' } })),
    ).toBeNull();
    expect(readRefusal(p(2, 5), mappedMetadata('name'))).toBeNull();
    expect(
      readRefusal(p(3, 7, ['columnMapping'], ['columnMapping']), mappedMetadata('id')),
    ).toBeNull();
    // A mapped mode whose fields lack their ids and physical names, or an unknown mode, is refused.
    expect(
      readRefusal(p(2, 5), metadata({ configuration: { 'delta.columnMapping.mode': 'name' } })),
    ).toBe('columnMapping');
    expect(readRefusal(p(2, 5), mappedMetadata('position'))).toBe('columnMapping');
    // A mode the protocol does not support is ignored (PROTOCOL.md "Column Mapping").
    expect(
      readRefusal(p(1, 2), metadata({ configuration: { 'delta.columnMapping.mode': 'name' } })),
    ).toBeNull();
  });

  it('refuses unsupported and unknown reader features, and versions above 3', () => {
    expect(readRefusal(p(3, 7, ['deletionVectors']))).toBeNull();
    expect(readRefusal(p(3, 7, ['v2Checkpoint']))).toBeNull();
    expect(readRefusal(p(3, 7, ['timestampNtz', 'someFutureFeature']))).toBe('someFutureFeature');
    expect(readRefusal(p(4, 7))).toBe('minReaderVersion=4');
    expect(readRefusal(p(1, 2), metadata({ type: 'variant' }))).toBe('variantType');
  });

  it('the message names the feature, the table and the access', () => {
    expect(() =>
      assertReadable(p(3, 7, ['catalogManaged', 'someFutureFeature']), metadata(), 'file:///t/'),
    ).toThrow(
      "cannot read table file:///t/: it uses the table feature 'catalogManaged', which tidemark cannot read (not supported for reading; also unsupported: someFutureFeature)",
    );
  });

  it('a write refusal says whether the feature rules out reading too, or only writing', () => {
    expect(() => assertWritable(p(1, 7, null, ['liquid']), metadata(), 'file:///t/')).toThrow(
      "cannot write table file:///t/: it uses the table feature 'liquid', which tidemark can read but not write (not supported for writing)",
    );
    expect(() =>
      assertWritable(p(3, 7, ['catalogManaged'], ['catalogManaged']), metadata(), 'file:///t/'),
    ).toThrow(
      "cannot write table file:///t/: it uses the table feature 'catalogManaged', which tidemark cannot read",
    );
  });
});

describe('writer gate', () => {
  it('accepts supported features while their conditions hold', () => {
    for (const w of [1, 2, 3, 4, 6]) expect(writeRefusal(p(1, w)), `writer ${w}`).toBeNull();
    expect(
      writeRefusal(
        p(3, 7, ['timestampNtz'], ['timestampNtz', 'appendOnly', 'invariants', 'checkConstraints']),
      ),
    ).toBeNull();
    expect(
      writeRefusal(p(1, 7, null, ['changeDataFeed', 'generatedColumns', 'identityColumns'])),
    ).toBeNull();
    expect(writeRefusal(p(1, 5))).toBeNull(); // column mapping in mode none
  });

  it('accepts tables that use invariants, CHECK constraints and a change data feed (the engine honours them)', () => {
    expect(
      writeRefusal(
        p(1, 2),
        metadata({
          fieldMetadata: { 'delta.invariants': '{"expression":{"expression":"v > 0"}}' },
        }),
      ),
    ).toBeNull();
    expect(
      writeRefusal(
        p(1, 3),
        metadata({ configuration: { 'delta.constraints.positive': 'id > 0' } }),
      ),
    ).toBeNull();
    expect(
      writeRefusal(p(1, 4), metadata({ configuration: { 'delta.enableChangeDataFeed': 'true' } })),
    ).toBeNull();
    expect(
      writeRefusal(
        p(1, 7, null, ['changeDataFeed']),
        metadata({ configuration: { 'delta.enableChangeDataFeed': 'TRUE' } }),
      ),
    ).toBeNull();
  });

  it('refuses supported features whose conditions do not hold', () => {
    const reserved = { ...metadata({ configuration: { 'delta.enableChangeDataFeed': 'true' } }) };
    reserved.schemaString = JSON.stringify({
      type: 'struct',
      fields: [{ name: '_change_type', type: 'string', nullable: true, metadata: {} }],
    });
    expect(writeRefusal(p(1, 4), reserved)).toBe('changeDataFeed');
    expect(
      writeRefusal(
        p(1, 4),
        metadata({ fieldMetadata: { 'delta.generationExpression': 'id + 1' } }),
      ),
    ).toBe('generatedColumns');
    expect(
      writeRefusal(
        p(1, 6),
        metadata({ fieldMetadata: { 'delta.identity.start': 1, 'delta.identity.step': 1 } }),
      ),
    ).toBe('identityColumns');
    // Column mapping: a mapped mode needs an id and a physical name on every field.
    expect(
      writeRefusal(p(2, 5), metadata({ configuration: { 'delta.columnMapping.mode': 'name' } })),
    ).toBe('columnMapping');
  });

  it('refuses features a minimal writer cannot honour, and unknown names', () => {
    for (const feature of [
      'liquid',
      'icebergCompatV2',
      'variantType',
      'allowColumnDefaults',
      'vacuumProtocolCheck',
      'brandNewFeature',
    ]) {
      expect(writeRefusal(p(1, 7, null, [feature])), feature).toBe(feature);
    }
    expect(writeRefusal(p(1, 8))).toBe('minWriterVersion=8');
  });

  it('accepts domainMetadata (tidemark keeps every domain and stores job state in its own)', () => {
    expect(writeRefusal(p(1, 7, null, ['domainMetadata']))).toBeNull();
  });

  it('a writer must also pass the reader gate', () => {
    expect(writeRefusal(p(3, 7, ['someFutureFeature'], ['someFutureFeature']))).toBe(
      'someFutureFeature',
    );
    expect(() =>
      assertWritable(p(3, 7, ['someFutureFeature'], ['liquid']), metadata(), 'file:///t/'),
    ).toThrow(
      /cannot write table .*'someFutureFeature', which tidemark cannot read.*also unsupported: liquid/,
    );
  });

  it("table 16's protocol: row tracking, domains and DVs are honoured, the pre-standard liquid is refused for writing only", () => {
    expect(() =>
      assertWritable(
        p(
          3,
          7,
          ['deletionVectors'],
          ['domainMetadata', 'deletionVectors', 'rowTracking', 'liquid'],
        ),
        metadata(),
        'file:///t/',
      ),
    ).toThrow(
      "cannot write table file:///t/: it uses the table feature 'liquid', which tidemark can read but not write (not supported for writing)",
    );
  });

  it('accepts row tracking, in-commit timestamps, V2 checkpoints and clustering while their requirements hold', () => {
    const rowTracking = {
      'delta.enableRowTracking': 'true',
      'delta.rowTracking.materializedRowIdColumnName': '_row-id-col-x',
      'delta.rowTracking.materializedRowCommitVersionColumnName': '_row-commit-version-col-x',
    };
    expect(
      writeRefusal(
        p(1, 7, null, ['domainMetadata', 'rowTracking']),
        metadata({ configuration: rowTracking }),
      ),
    ).toBeNull();
    expect(writeRefusal(p(1, 7, null, ['domainMetadata', 'rowTracking']))).toBeNull(); // supported, not enabled
    expect(
      writeRefusal(
        p(1, 7, null, ['inCommitTimestamp']),
        metadata({ configuration: { 'delta.enableInCommitTimestamps': 'true' } }),
      ),
    ).toBeNull();
    expect(writeRefusal(p(3, 7, ['v2Checkpoint'], ['v2Checkpoint']))).toBeNull();
    expect(writeRefusal(p(1, 7, null, ['domainMetadata', 'clustering']))).toBeNull();
    // Requirements that do not hold: the feature is named with the reason.
    expect(writeRefusal(p(1, 7, null, ['rowTracking']))).toBe('rowTracking'); // without domainMetadata
    const suspended = { ...rowTracking, 'delta.rowTrackingSuspended': 'true' };
    expect(
      writeRefusal(
        p(1, 7, null, ['domainMetadata', 'rowTracking']),
        metadata({ configuration: suspended }),
      ),
    ).toBe('rowTracking');
    const unnamed = { 'delta.enableRowTracking': 'true' };
    expect(
      writeRefusal(
        p(1, 7, null, ['domainMetadata', 'rowTracking']),
        metadata({ configuration: unnamed }),
      ),
    ).toBe('rowTracking');
    expect(writeRefusal(p(1, 7, null, ['clustering']))).toBe('clustering');
  });

  it('type widening: read and written while every recorded change is a widening tidemark reads', () => {
    const changes = (fromType: string, toType: string) => ({
      'delta.typeChanges': [{ fromType, toType, tableVersion: 1 }],
    });
    const widened = (fromType: string, toType: string) =>
      metadata({ fieldMetadata: changes(fromType, toType), type: toType });
    for (const feature of ['typeWidening', 'typeWidening-preview']) {
      const protocol = p(3, 7, [feature], [feature]);
      for (const [from, to] of [
        ['integer', 'long'],
        ['byte', 'integer'],
        ['float', 'double'],
        ['short', 'double'],
        ['date', 'timestamp_ntz'],
        ['decimal(5,2)', 'decimal(10,4)'],
        ['integer', 'decimal(12,2)'],
      ]) {
        expect(readRefusal(protocol, widened(from!, to!)), `${from} → ${to}`).toBeNull();
        expect(writeRefusal(protocol, widened(from!, to!)), `${from} → ${to}`).toBeNull();
      }
      for (const [from, to] of [
        ['long', 'integer'],
        ['long', 'double'],
        ['decimal(10,4)', 'decimal(10,2)'],
        ['long', 'decimal(10,0)'],
        ['string', 'long'],
      ]) {
        expect(readRefusal(protocol, widened(from!, to!)), `${from} → ${to}`).toBe(feature);
      }
    }
  });

  it('accepts deletion vectors for reading and writing (tidemark reads them and writes them in MERGE)', () => {
    expect(writeRefusal(p(3, 7, ['deletionVectors'], ['deletionVectors']))).toBeNull();
  });
});
