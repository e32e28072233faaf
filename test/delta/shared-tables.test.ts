/**
 * Every table in the shared folder of real Spark/delta-rs tables, read back as its README says,
 * or refused with the feature named. A new folder without an entry below fails the suite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnsupportedFeatureError } from '../../src/errors.js';
import { assertWritable } from '../../src/delta/features.js';
import { loadSnapshot } from '../../src/delta/replay.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import { statsBounds } from '../../src/delta/stats.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { LocalStorage } from '../../src/storage/local.js';
import { sharedTable, sharedTableNames } from '../helpers/shared-tables.js';
import { checkpointIO, scanSource } from '../../scripts/lib/tables.js';

interface Expectation {
  version: number;
  files: number;
  rows: number;
  /** SQL expression over the table `t` → its value as text. */
  values?: Record<string, string | null>;
  /** Column → DuckDB type. */
  types?: Record<string, string>;
  /** Further checks on the snapshot itself. */
  snapshot?: (s: Snapshot) => void;
}

const A = '1637202600123456'; // 2021-11-18 02:30:00.123456 (timestamp-ntz README)
const B = '1373043660123456'; // 2013-07-05 17:01:00.123456

const READABLE: Record<string, Expectation> = {
  'primitives-append': {
    version: 0,
    files: 2,
    rows: 11,
    values: {
      'sum(as_int)': '45',
      'sum(as_long)': '45',
      'sum(as_byte)': '45',
      'sum(as_short)': '45',
      'sum(as_big_decimal)': '45',
      'sum(as_float)': '45.0',
      'sum(as_double)': '45.0',
      'count(*) FILTER (as_boolean)': '5',
      'max(as_binary)': '\\x09\\x09',
      "min(as_string) || '/' || max(as_string)": '0/9',
      'count(*) FILTER (as_int IS NULL AND as_long IS NULL AND as_byte IS NULL AND as_short IS NULL AND as_boolean IS NULL AND as_float IS NULL AND as_double IS NULL AND as_string IS NULL AND as_binary IS NULL AND as_big_decimal IS NULL)':
        '1',
    },
    types: {
      as_byte: 'TINYINT',
      as_short: 'SMALLINT',
      as_binary: 'BLOB',
      as_big_decimal: 'DECIMAL(1,0)',
    },
  },
  'simple-table-updates': {
    version: 4, // the uncommitted _delta_log/.tmp/5.json is ignored
    files: 5,
    rows: 3,
    values: { 'sum(id)': '21', "string_agg(id::VARCHAR, ',' ORDER BY id)": '5,7,9' },
    snapshot: (s) => expect(s.removes).toHaveLength(31),
  },
  'partition-all-types-nulls': {
    version: 0,
    files: 3,
    rows: 3,
    values: {
      'count(*) FILTER (as_int IS NULL)': '1',
      "count(*) FILTER (as_string_lit_null = 'null')": '2',
      'sum(as_int)': '1',
      'sum(as_long) + sum(as_byte) + sum(as_short)': '3',
      'count(*) FILTER (as_boolean)': '1',
      'sum(as_float) + sum(as_double)': '2.0',
      "string_agg(as_string, ',' ORDER BY as_string)": '0,1',
      "max(as_date - DATE '1970-01-01')": '18878',
      'count(DISTINCT epoch_us(as_timestamp))': '1',
      'max(epoch_us(as_timestamp))': '1631099471000000',
      'sum(as_big_decimal)': '1',
      "string_agg(value, ',' ORDER BY value)": '0,1,2',
      'sum(as_nested_struct.ac.acb) + sum(as_nested_struct.ac.aca)': '6',
      'sum(len(as_list_of_records))': '9',
      'sum(as_list_of_records[1].val)': '3',
      "count(*) FILTER (value = '2' AND as_int IS NULL AND as_long IS NULL AND as_byte IS NULL AND as_short IS NULL AND as_boolean IS NULL AND as_float IS NULL AND as_double IS NULL AND as_string IS NULL AND as_string_lit_null IS NULL AND as_date IS NULL AND as_timestamp IS NULL AND as_big_decimal IS NULL)":
        '1',
    },
    types: {
      as_timestamp: 'TIMESTAMP WITH TIME ZONE',
      as_date: 'DATE',
      as_big_decimal: 'DECIMAL(1,0)',
      as_float: 'FLOAT',
    },
  },
  'partition-escaped-chars': {
    version: 2,
    files: 3,
    rows: 3,
    values: {
      "string_agg(_1 || '=' || _2, ',' ORDER BY _1)": 'foo1=bar+%21,foo2=bar+%22,foo3=bar+%23',
    },
  },
  'partition-timestamp-int96': {
    version: 0,
    files: 5,
    rows: 5,
    values: {
      "string_agg(id || ':' || coalesce(epoch_us(part)::VARCHAR, 'null') || ':' || coalesce(epoch_us(time)::VARCHAR, 'null'), ',' ORDER BY id)":
        '0:1577866150001000:1580544550000000,1:1633075760000000:915181200000000,' +
        '2:1633075760000000:946717200000000,3:-31536000000000:-31536000000000,4:null:null',
    },
    types: { part: 'TIMESTAMP WITH TIME ZONE', time: 'TIMESTAMP WITH TIME ZONE' },
    snapshot: (s) => {
      const nullFile = s.files.find((f) => f.partitionValues['part'] === null)!;
      expect(statsBounds(nullFile, 'time')).toMatchObject({
        nullCount: 1,
        numRecords: 1,
        min: undefined,
      });
      const first = s.files.find((f) => f.partitionValues['part'] === '2020-01-01 08:09:10.001')!;
      expect(statsBounds(first, 'time')?.max).toBe('2020-02-01T08:09:10.000Z');
    },
  },
  'partition-timestamp-iso8601': {
    version: 0,
    files: 2,
    rows: 2,
    values: {
      "string_agg(str || '=' || epoch_us(ts), ',' ORDER BY ts)":
        '2024-01-01 10:00:00=1704103200000000,2024-01-02 12:30:00=1704198600000000',
      "count(*) FILTER (strftime(ts, '%Y-%m-%d %H:%M:%S') = str)": '2',
    },
    types: { ts: 'TIMESTAMP WITH TIME ZONE' },
  },
  'decimal-partitioned': {
    version: 0,
    files: 4,
    rows: 4,
    values: {
      'sum(part)': '114.00035',
      'sum(col1)': '-887.88',
      'sum(col2)': '-77775.77777',
      'sum(col3)': '-6666666663.6666666666',
      "string_agg(part::VARCHAR, ',' ORDER BY part)":
        '-2342342.23423,0.00004,234.00000,2342222.23454',
    },
    types: {
      part: 'DECIMAL(12,5)',
      col1: 'DECIMAL(5,2)',
      col2: 'DECIMAL(10,5)',
      col3: 'DECIMAL(20,10)',
    },
    snapshot: (s) => {
      // A double cannot hold -9999999999.9999999999: the bound stays exact text.
      const bounds = s.files.map((f) => statsBounds(f, 'col3')?.min);
      expect(bounds).toContain('-9999999999.9999999999');
      expect(bounds).toContain(0);
    },
  },
  'checkpoint-classic': {
    version: 13,
    files: 7,
    rows: 41,
    values: { 'sum(id)': '1470', 'min(id)': '0', 'max(id)': '65' },
    snapshot: (s) => {
      expect(s.removes).toHaveLength(7);
      expect(s.protocol).toMatchObject({ minReaderVersion: 1, minWriterVersion: 2 });
    },
  },
  'checkpoint-multipart': {
    version: 1,
    files: 10,
    rows: 31,
    values: { 'sum(id)': '435', 'count(DISTINCT id)': '30' },
    snapshot: (s) => expect(s.metadata.configuration['delta.checkpointInterval']).toBe('1'),
  },
  'txn-streaming-checkpoint': {
    version: 3,
    files: 3,
    rows: 6,
    values: { 'sum(value)': '12', "string_agg(value::VARCHAR, ',' ORDER BY value)": '1,1,2,2,3,3' },
    snapshot: (s) => {
      expect(s.txns.get('e4a20b59-dd0e-4c50-b074-e8ae4786df30')).toMatchObject({
        version: 0,
        lastUpdated: 1564524299648,
      });
      expect(s.txns.size).toBe(1);
      expect(s.removes).toHaveLength(4);
    },
  },
  'nested-map-array-struct': {
    version: 0,
    files: 2,
    rows: 10,
    values: {
      'sum(i)': '45',
      'sum(list_sum(map_values(a)))': '45',
      'sum(list_sum(map_keys(b))) + sum(list_sum(map_values(b)))': '90',
      'count(*) FILTER (map_values(c)[1])': '5',
      'sum(map_keys(d)[1]) + sum(map_values(d)[1])': '90.0',
      'sum(map_values(e)[1]) FILTER (map_keys(e)[1] = i::VARCHAR)': '45',
      'sum(len(map_values(f)[1]))': '30',
      'sum(map_values(f)[1][3].val)': '45',
    },
    types: {
      b: 'MAP(BIGINT, TINYINT)',
      e: 'MAP(VARCHAR, DECIMAL(1,0))',
      f: 'MAP(INTEGER, STRUCT(val INTEGER)[])',
    },
  },
  'timestamp-ntz': {
    version: 1,
    files: 4,
    rows: 9,
    values: {
      'sum(id)': '36',
      "string_agg(id || ':' || coalesce(epoch_us(tsNtz)::VARCHAR, '-') || ':' || coalesce(epoch_us(tsNtzPartition)::VARCHAR, '-'), ',' ORDER BY id)":
        [
          `0:${A}:${A}`,
          `1:${B}:${A}`,
          `2:-:${A}`,
          `3:${A}:${B}`,
          `4:${B}:${B}`,
          `5:-:${B}`,
          `6:${A}:-`,
          `7:${B}:-`,
          '8:-:-',
        ].join(','),
    },
    types: { tsNtz: 'TIMESTAMP', tsNtzPartition: 'TIMESTAMP' },
  },
  'schema-evolution-protocol-upgrade': {
    version: 2,
    files: 4,
    rows: 40,
    values: { 'sum(col1)': '380', 'count(*) FILTER (col2 IS NULL)': '20', 'sum(col2)': '10' },
    snapshot: (s) => {
      expect(s.protocol).toMatchObject({
        minReaderVersion: 3,
        minWriterVersion: 7,
        readerFeatures: [],
      });
      expect(s.schema.fields.map((f) => f.name)).toEqual(['col1', 'col2']);
    },
  },
  // Deletion vectors (README 14, 16, 18, 21): the rows they delete are not read.
  'deletion-vectors': {
    version: 3,
    files: 1,
    rows: 47,
    values: {
      'sum(id)': '1204',
      'min(id)': '1',
      'max(id)': '49',
      'count(*) FILTER (id IN (0, 7, 14))': '0',
    },
    snapshot: (s) => {
      expect(s.files[0]!.deletionVector).toMatchObject({
        storageType: 'u',
        pathOrInlineDv: '^jP?.<zvDfIGb{C.FPij',
        offset: 1,
        cardinality: 3,
      });
      expect(s.removes).toHaveLength(3);
    },
  },
  // V2 checkpoint (README 15): the UUID-named checkpoint and its two sidecars are the replay base.
  'v2-checkpoint-sidecars': {
    version: 2,
    files: 4,
    rows: 10,
    values: { 'sum(id)': '45', 'min(id)': '0', 'max(id)': '9' },
    snapshot: (s) =>
      expect(s.protocol).toMatchObject({
        readerFeatures: ['v2Checkpoint'],
        writerFeatures: ['v2Checkpoint', 'appendOnly', 'invariants'],
      }),
  },
  'liquid-clustering-rowtracking': {
    version: 0,
    files: 10,
    rows: 10,
    values: { 'sum(id)': '45' },
    snapshot: (s) =>
      expect(s.files.map((f) => f.baseRowId).sort((a, b) => Number(a) - Number(b))).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
      ]),
  },
  'dv-partitioned-with-checkpoint': {
    version: 15,
    files: 15,
    rows: 35,
    values: {
      'sum(col1)': '1015',
      'min(col1)': '1',
      'max(col1)': '49',
      'count(*) FILTER (part = 0)': '2',
    },
    snapshot: (s) => expect(s.files.filter((f) => f.deletionVector)).toHaveLength(2),
  },
  'table-with-dv-large': {
    version: 4,
    files: 22,
    rows: 1993,
    values: {
      'sum(value)': '1994767',
      'min(value)': '1',
      'max(value)': '1999',
      'count(DISTINCT value)': '1993',
      "string_agg(value::VARCHAR, ',' ORDER BY value) FILTER (value IN (0, 180, 250, 300, 350, 700, 900, 1353, 1567, 1800))":
        '700,900,1567',
    },
    snapshot: (s) => expect(s.files.filter((f) => f.deletionVector)).toHaveLength(8),
  },
  // Column mapping (README 13, 19, 20): files, partition values and stats use physical names.
  'column-mapping-name': {
    version: 0,
    files: 2,
    rows: 5,
    values: {
      'string_agg("Company Very Short" || \':\' || "Super Name", \',\' ORDER BY "Super Name")':
        'BMS:Anthony Johnson,BMS:Mr. Daniel Ferguson MD,BMS:Nathan Bennett,BMS:Stephanie Mcgrath,BME:Timothy Lamb',
    },
    types: { 'Company Very Short': 'VARCHAR', 'Super Name': 'VARCHAR' },
    snapshot: (s) =>
      expect(s.files.map((f) => Object.keys(f.partitionValues))).toEqual([
        ['col-173b4db9-b5ad-427f-9e75-516aae37fbbb'],
        ['col-173b4db9-b5ad-427f-9e75-516aae37fbbb'],
      ]),
  },
  'dv-with-columnmapping': {
    version: 15,
    files: 15,
    rows: 35,
    values: {
      'sum(col1)': '1015',
      'min(col1)': '1',
      'max(col1)': '49',
      'count(*) FILTER (part = 0)': '2',
      'count(*) FILTER (col2 IS NULL)': '0',
    },
    types: { part: 'INTEGER', col1: 'INTEGER', col2: 'VARCHAR' },
    snapshot: (s) => expect(s.files.filter((f) => f.deletionVector)).toHaveLength(2),
  },
  'table-with-columnmapping-mode-id': {
    version: 0,
    files: 2,
    rows: 6,
    values: {
      "sum(ByteType) || '/' || sum(ShortType) || '/' || sum(IntegerType) || '/' || sum(LongType)":
        '10/10/10/10',
      'sum(decimal)': '10.00',
      'sum(FloatType) + sum(DoubleType)': '20.0',
      'count(*) FILTER (BooleanType)': '3',
      'sum(epoch_us(TimestampType))': '10000',
      "string_agg(StringType || ':' || decode(BinaryType) || ':' || DateType, ',' ORDER BY IntegerType)":
        '0:0:2021-11-18,1:1:2021-11-18,2:2:2021-11-18,3:3:2021-11-18,4:4:2021-11-18',
      "string_agg(nested_struct.aa || ':' || nested_struct.ac.aca, ',' ORDER BY IntegerType)":
        '0:0,1:1,2:2,3:3,4:4',
      'sum(list_sum(array_of_prims)) + sum(list_sum(flatten(array_of_arrays)))': '95',
      'sum(list_sum(map_values(array_of_map_of_arrays[1])[1]))': '25',
      'sum(array_of_structs[1].ab + array_of_structs[2].ab)': '20',
      'sum(list_sum(struct_of_arrays_maps_of_structs.aa))': '25',
      'sum(map_values(struct_of_arrays_maps_of_structs.ab)[1].aca + list_sum(map_keys(struct_of_arrays_maps_of_structs.ab)[1]))':
        '45',
      'sum(map_values(map_of_prims)[1] + map_values(map_of_prims)[2])': '40',
      'sum(map_values(map_of_rows)[1].ab)': '200',
      'sum(len(map_values(map_of_arrays)[1])) + sum(len(map_values(map_of_arrays)[2]))': '15',
      'sum(map_values(map_values(map_of_maps)[2])[1])': '10',
      'count(*) FILTER (ByteType IS NULL AND nested_struct IS NULL AND array_of_structs IS NULL AND struct_of_arrays_maps_of_structs IS NULL AND map_of_rows IS NULL AND map_of_maps IS NULL)':
        '1',
    },
    types: {
      ByteType: 'TINYINT',
      decimal: 'DECIMAL(10,2)',
      TimestampType: 'TIMESTAMP WITH TIME ZONE',
      nested_struct: 'STRUCT(aa VARCHAR, ac STRUCT(aca INTEGER))',
      array_of_structs: 'STRUCT(ab INTEGER)[]',
      struct_of_arrays_maps_of_structs:
        'STRUCT(aa INTEGER[], ab MAP(INTEGER[], STRUCT(aca INTEGER)))',
      map_of_rows: 'MAP(INTEGER, STRUCT(ab BIGINT))',
    },
  },
};

/** Time travel on the DV tables: rows and sums per version (README 14, 18, 21). */
const VERSIONS: Record<
  string,
  Array<[version: number, rows: number, sum: string, column: string]>
> = {
  'deletion-vectors': [
    [0, 50, '1225', 'id'],
    [1, 49, '1225', 'id'],
    [2, 48, '1218', 'id'],
    [3, 47, '1204', 'id'],
  ],
  'dv-partitioned-with-checkpoint': [
    [0, 50, '1225', 'col1'],
    [5, 45, '1205', 'col1'],
    [9, 41, '1153', 'col1'],
    [10, 40, '1135', 'col1'],
    [13, 37, '1069', 'col1'],
  ],
  'table-with-dv-large': [
    [0, 2000, '1999000', 'value'],
    [1, 1995, '1996020', 'value'],
    [2, 1997, '1997020', 'value'],
    [3, 1991, '1992300', 'value'],
  ],
  'dv-with-columnmapping': [
    [0, 50, '1225', 'col1'],
    [5, 45, '1205', 'col1'],
    [9, 41, '1153', 'col1'],
    [10, 40, '1135', 'col1'],
    [13, 37, '1069', 'col1'],
  ],
};

/** Tables that must be refused for reading, with the feature the error must name (none left: every shared table is read). */
const REFUSED: Record<string, string> = {};

/** Writer refusals: the feature named first, and other words the message must hold. */
const WRITE_REFUSED: Record<string, { feature: string; mentions: string[] }> = {
  // Row tracking, domain metadata and DVs are honoured; the pre-standard `liquid` is unknown: only writing is refused.
  'liquid-clustering-rowtracking': { feature: 'liquid', mentions: ['can read but not write'] },
};

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

function storageOf(name: string): LocalStorage {
  return new LocalStorage(sharedTable(name));
}

async function open(
  name: string,
  opts: { version?: number; checkReadable?: boolean } = {},
): Promise<Snapshot> {
  const snapshot = await loadSnapshot(storageOf(name), checkpointIO(session), opts);
  if (!snapshot) throw new Error(`${name}: no Delta log found`);
  return snapshot;
}

/** Evaluate SQL expressions over the table as `t`; each result as text. */
async function evaluate(
  name: string,
  snapshot: Snapshot,
  exprs: string[],
): Promise<Record<string, string | null>> {
  return withTableScan(session, scanSource(storageOf(name)), snapshot, async (relation) => {
    const select = ['count(*)', ...exprs]
      .map((e, i) => `CAST((${e}) AS VARCHAR) AS c${i}`)
      .join(', ');
    const row = (await session.allJson(`SELECT ${select} FROM (${relation}) AS t`))[0]!;
    return Object.fromEntries(
      ['count(*)', ...exprs].map((e, i) => [e, row[`c${i}`] as string | null]),
    );
  });
}

async function columnTypes(name: string, snapshot: Snapshot): Promise<Record<string, string>> {
  return withTableScan(session, scanSource(storageOf(name)), snapshot, async (relation) => {
    const rows = await session.allJson(`DESCRIBE SELECT * FROM (${relation})`);
    return Object.fromEntries(
      rows.map((r) => [String(r['column_name']), String(r['column_type'])]),
    );
  });
}

describe('shared Delta tables', () => {
  const names = sharedTableNames();

  it('every folder has an expectation', () => {
    expect(names.length).toBeGreaterThanOrEqual(17);
    const unknown = names.filter((n) => !(n in READABLE) && !(n in REFUSED));
    expect(unknown, 'add an entry for each new shared table').toEqual([]);
  });

  for (const name of names) {
    const expected = READABLE[name];
    if (expected) {
      it(`${name}: reads back as its README says`, async () => {
        const snapshot = await open(name);
        expect({ version: snapshot.version, files: snapshot.files.length }).toEqual({
          version: expected.version,
          files: expected.files,
        });
        const values = await evaluate(name, snapshot, Object.keys(expected.values ?? {}));
        expect(values).toEqual({ 'count(*)': String(expected.rows), ...expected.values });
        if (expected.types) expect(await columnTypes(name, snapshot)).toMatchObject(expected.types);
        expected.snapshot?.(snapshot);
        // Tables tidemark reads, it may also write, unless a writer feature is unknown to it.
        if (!(name in WRITE_REFUSED))
          expect(() =>
            assertWritable(snapshot.protocol, snapshot.metadata, snapshot.tableUri),
          ).not.toThrow();
      });
    }
    const feature = REFUSED[name];
    if (feature) {
      it(`${name}: reading is refused naming ${feature}`, async () => {
        const err = await open(name).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(UnsupportedFeatureError);
        expect((err as UnsupportedFeatureError).feature).toBe(feature);
        expect((err as Error).message).toContain(`'${feature}'`);
      });
    }
    const write = WRITE_REFUSED[name];
    if (write) {
      it(`${name}: writing is refused naming ${write.feature}`, async () => {
        const snapshot = await open(name, { checkReadable: false });
        let err: unknown;
        try {
          assertWritable(snapshot.protocol, snapshot.metadata, snapshot.tableUri);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(UnsupportedFeatureError);
        expect((err as UnsupportedFeatureError).feature).toBe(write.feature);
        for (const other of write.mentions) expect((err as Error).message).toContain(other);
      });
    }
  }
});

describe('time travel on shared tables', () => {
  for (const [name, versions] of Object.entries(VERSIONS)) {
    it(`${name}: rows and sum at every version the README lists (deletion vectors applied as of each version)`, async () => {
      for (const [version, rows, sum, column] of versions) {
        const snapshot = await open(name, { version });
        expect(await evaluate(name, snapshot, [`sum(${column})`]), `v${version}`).toEqual({
          'count(*)': String(rows),
          [`sum(${column})`]: sum,
        });
      }
    });
  }

  it('simple-table-updates: rows, live files and sum(id) at every version', async () => {
    const perVersion = [
      [5, 6, '10'],
      [20, 22, '190'],
      [5, 6, '35'],
      [5, 6, '235'],
      [3, 5, '21'],
    ];
    for (const [version, [rows, files, sum]] of perVersion.entries()) {
      const snapshot = await open('simple-table-updates', { version });
      expect(snapshot.files, `v${version}`).toHaveLength(files as number);
      expect(await evaluate('simple-table-updates', snapshot, ['sum(id)']), `v${version}`).toEqual({
        'count(*)': String(rows),
        'sum(id)': sum,
      });
    }
  });

  it('checkpoint-classic: versions before and after the checkpoint at 10', async () => {
    const expected: Record<number, [number, string]> = {
      0: [10, '45'],
      4: [50, '1225'],
      9: [25, '550'],
      10: [35, '1095'],
      12: [55, '2485'],
    };
    for (const [version, [rows, sum]] of Object.entries(expected)) {
      const snapshot = await open('checkpoint-classic', { version: Number(version) });
      expect(await evaluate('checkpoint-classic', snapshot, ['sum(id)']), `v${version}`).toEqual({
        'count(*)': String(rows),
        'sum(id)': sum,
      });
    }
  });

  it('schema-evolution-protocol-upgrade: version 0 has the old schema and protocol', async () => {
    const snapshot = await open('schema-evolution-protocol-upgrade', { version: 0 });
    expect(snapshot.schema.fields.map((f) => f.name)).toEqual(['col1']);
    expect(snapshot.protocol).toMatchObject({ minReaderVersion: 1, minWriterVersion: 2 });
    expect(await evaluate('schema-evolution-protocol-upgrade', snapshot, [])).toEqual({
      'count(*)': '20',
    });
  });

  it('partition-escaped-chars: one more row per version', async () => {
    for (const version of [0, 1, 2]) {
      const snapshot = await open('partition-escaped-chars', { version });
      expect(await evaluate('partition-escaped-chars', snapshot, [])).toEqual({
        'count(*)': String(version + 1),
      });
    }
  });

  it('a version after the latest is a usage error naming the latest', async () => {
    await expect(open('simple-table-updates', { version: 5 })).rejects.toThrow(
      /no version 5; the latest is 4/,
    );
  });
});
