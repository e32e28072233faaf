/**
 * Nothing changed on the way in (docs/concepts.md, Types), through the real job on local
 * folders: once the table exists, every file is read in its types through exact conversions, and
 * a text that does not spell a value of the column's type fails the batch naming file, line and
 * column (or is quarantined), with nothing committed.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadFileError, ConfigError, SchemaError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { failure } from '../helpers/cli.js';
import { copyWithNanosUtcFlag } from '../../src/engine/parquet-utc-nanos.js';
import { sharedTable } from '../helpers/shared-tables.js';
import { parquetOf, putParquet, tableRows } from './drift-helpers.js';
import {
  DuckSession,
  makeConfig,
  mergeTarget,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

/** A landing zone and a merge job on it (key order_id, orderBy seq); `extra` overrides job fields, `sourceExtra` source fields. */
async function zone(
  extra: Record<string, unknown> = {},
  sourceExtra: Record<string, unknown> = {},
) {
  const sourceDir = await tempDir('types-src', dirs);
  const source = new LocalStorage(sourceDir);
  const setup = makeConfig({
    source: { uri: sourceDir, discover: byDay, ...sourceExtra },
    target: mergeTarget(await tempDir('types-t', dirs)),
    ...extra,
  });
  return { source, setup, uri: source.uri };
}

/** `setup` with `source.columns` declaring `columns`. */
function declaring(setup: ReturnType<typeof makeConfig>, columns: Record<string, string>) {
  return { ...setup, job: { ...setup.job, source: { ...setup.job.source, columns } } };
}

/** A table of exact types, created from Parquet: BIGINT key and version, DECIMAL(10,2) amount. */
async function typedTable(extra: Record<string, unknown> = {}) {
  const z = await zone(extra);
  await putParquet(
    z.source,
    session,
    '2025/03/01/seed.parquet',
    `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, 1.25::DECIMAL(10,2) AS amount, 'a' AS note`,
  );
  await run(z.setup);
  return z;
}

describe('into an existing table, text converts only when it spells the value exactly', () => {
  const BAD: Array<[file: string, body: string, column: string]> = [
    ['underscore.csv', 'order_id,seq\n2,1\n1_000,1\n', 'order_id'],
    ['exponent.csv', 'order_id,seq\n1e3,1\n', 'order_id'],
    ['blanks.csv', 'order_id,seq\n" 42 ",1\n', 'order_id'],
    ['fraction.csv', 'order_id,seq\n7,12.5\n', 'seq'],
    ['too-wide.csv', 'order_id,seq,amount\n8,1,123456789.50\n', 'amount'],
    ['rounds.csv', 'order_id,seq,amount\n9,1,1.505\n', 'amount'],
  ];

  it('1_000 into a BIGINT key fails the batch naming file, line and column; nothing is committed', async () => {
    const z = await typedTable();
    await z.source.write('2025/03/02/ok.csv', 'order_id,seq\n1000,2\n');
    await z.source.write(`2025/03/02/${BAD[0]![0]}`, BAD[0]![1]);
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/underscore.csv`,
      column: 'order_id',
      line: 3,
      row: 2,
    });
    expect(err.message).toContain('"1_000"');
    expect(err.message).toContain('line 3');
    const table = await readTarget(session, z.setup);
    expect(table.snapshot!.version).toBe(0);
    expect(table.state.discovery).toMatchObject({ watermark: '2025-03-01' });
  });

  it('under onBadFile: quarantine each such file is set aside with its line and column, and the good rows load unchanged', async () => {
    const z = await typedTable({ onBadFile: 'quarantine' });
    await z.source.write('2025/03/02/ok.csv', 'order_id,seq,amount\n1000,2,2.50\n42,2,-0.5\n');
    for (const [file, body] of BAD) await z.source.write(`2025/03/02/${file}`, body);
    const report = await run(z.setup);
    expect(report).toMatchObject({ status: 'succeeded', inserted: 2 });
    const reasons = new Map(
      report.quarantined!.map((q) => [q.key.replace('2025/03/02/', ''), q.reason]),
    );
    expect([...reasons.keys()].sort()).toEqual(BAD.map(([f]) => f).sort());
    for (const [file, body, column] of BAD) {
      const line = body.split('\n').length - 1;
      expect(reasons.get(file)).toMatch(new RegExp(`of column "${column}" .*line ${line}\\b`));
    }
    expect(await tableRows(session, z.setup, 'order_id')).toEqual([
      { order_id: '1', seq: '1', amount: '1.25', note: 'a' },
      { order_id: '42', seq: '2', amount: '-0.50', note: null },
      { order_id: '1000', seq: '2', amount: '2.50', note: null },
    ]);
  });

  it('a line break inside a quoted field moves the line the error names', async () => {
    const z = await typedTable();
    await z.source.write('2025/03/02/notes.csv', 'order_id,seq,note\n2,1,"two\nlines"\n3,x,ok\n');
    const err = await failure(run(z.setup));
    expect((err as BadFileError).context).toMatchObject({ column: 'seq', line: 4, row: 2 });
  });
});

describe('one date format per job', () => {
  /** Three days, one file each, all holding 01/02/2026; the third also 13/02/2026, which only reads day first. */
  async function threeDays(z: Awaited<ReturnType<typeof zone>>) {
    await z.source.write('2025/03/02/a.csv', 'order_id,seq,day\n2,1,01/02/2026\n');
    await z.source.write('2025/03/03/b.csv', 'order_id,seq,day\n3,1,01/02/2026\n');
    await z.source.write('2025/03/04/c.csv', 'order_id,seq,day\n4,1,01/02/2026\n5,1,13/02/2026\n');
  }

  async function dateTable(csv?: Record<string, unknown>) {
    const z = await zone({}, csv ? { csv } : {});
    await putParquet(
      z.source,
      session,
      '2025/03/01/seed.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, DATE '2026-01-01' AS day`,
    );
    await run(z.setup);
    return z;
  }

  it('a date text that reads two ways fails naming the column and both readings; nothing is committed', async () => {
    const z = await dateTable();
    await threeDays(z);
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain(
      '"01/02/2026" of column "day" reads two ways: 2026-01-02 (month first) or 2026-02-01 (day first)',
    );
    expect(err.message).toContain('source.csv.dateFormat');
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/a.csv`,
      column: 'day',
      line: 2,
    });
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });

  it('with source.csv.dateFormat every file reads the same way', async () => {
    const z = await dateTable({ dateFormat: '%d/%m/%Y' });
    await threeDays(z);
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 4 });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => r['day'])).toEqual([
      '2026-01-01',
      '2026-02-01',
      '2026-02-01',
      '2026-02-01',
      '2026-02-13',
    ]);
  });
});

/** The Delta types of the job's table, by column. */
async function tableTypes(
  setup: Awaited<ReturnType<typeof zone>>['setup'],
): Promise<Record<string, unknown>> {
  const snapshot = (await readTarget(session, setup)).snapshot!;
  return Object.fromEntries(snapshot.schema.fields.map((f) => [f.name, f.type]));
}

describe('a new table: the types are inferred once, from every CSV file of the first batch, losing nothing', () => {
  it('20-digit ids stay three keys (decimal(38,0), never a double); a long decimal keeps its digits', async () => {
    const z = await zone();
    await z.source.write(
      '2025/03/01/a.csv',
      'order_id,seq,amount\n12345678901234567890,1,12345678901234567890.123456789\n12345678901234567891,1,1.5\n12345678901234567892,1,2\n',
    );
    expect(await run(z.setup)).toMatchObject({
      status: 'succeeded',
      rowsRead: 3,
      rowsAfterDedupe: 3,
      inserted: 3,
    });
    expect(await tableTypes(z.setup)).toMatchObject({
      order_id: 'decimal(38,0)',
      seq: 'long',
      amount: 'decimal(38,9)',
    });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['order_id'], r['amount']])).toEqual([
      ['12345678901234567890', '12345678901234567890.123456789'],
      ['12345678901234567891', '1.500000000'],
      ['12345678901234567892', '2.000000000'],
    ]);
  });

  it('codes 1E5, 100000, 1e5 and 100000.0 in a key column are four keys (text), and 007 keeps its zeros', async () => {
    const z = await zone();
    await z.source.write(
      '2025/03/01/a.csv',
      'order_id,seq,code\n1E5,1,007\n100000,1,7\n1e5,1,10\n100000.0,1,x\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 4 });
    expect(await tableTypes(z.setup)).toMatchObject({ order_id: 'string', code: 'string' });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => r['order_id']).sort()).toEqual(['100000', '100000.0', '1E5', '1e5']);
    expect(rows.find((r) => r['order_id'] === '1E5')!['code']).toBe('007');
  });

  it('0 and -0 in a key column are two keys (text), and 0.0 and -0.0 too; a double column keeps -0.0', async () => {
    // As a long (or a decimal) -0 is 0: the two rows would be one key, one of them dropped.
    const z = await zone();
    await z.source.write(
      '2025/03/01/a.csv',
      'order_id,seq,amount\n0,1,-0.0\n-0,1,1.5\n0.0,1,0.0\n-0.0,1,2\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 4 });
    expect(await tableTypes(z.setup)).toMatchObject({ order_id: 'string', amount: 'double' });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['order_id'], r['amount']])).toEqual([
      ['-0', 1.5],
      ['-0.0', 2],
      ['0', -0],
      ['0.0', 0],
    ]);
    const ints = await zone();
    await ints.source.write('2025/03/01/a.csv', 'order_id,seq\n0,1\n-0,2\n');
    expect(await run(ints.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect(await tableTypes(ints.setup)).toMatchObject({ order_id: 'string' });
  });

  it('the types come from all files of the batch together, not from each file', async () => {
    const z = await zone();
    await z.source.write('2025/03/01/a.csv', 'order_id,seq,amount,day\n1,1,10,2026-01-31\n');
    await z.source.write('2025/03/02/b.csv', 'order_id,seq,amount,day\n2,1,10.25,2026-02-01\n');
    await z.source.write('2025/03/03/c.csv', 'order_id,seq,amount,day\n3,1,,\n');
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 3 });
    expect(await tableTypes(z.setup)).toMatchObject({
      order_id: 'long',
      seq: 'long',
      amount: 'double',
      day: 'date',
    });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['amount'], r['day']])).toEqual([
      [10, '2026-01-31'],
      [10.25, '2026-02-01'],
      [null, null],
    ]);
  });

  it('01/02/2026 in three files, without a dateFormat, fails naming both readings; nothing is committed', async () => {
    const z = await zone();
    await z.source.write('2025/03/01/a.csv', 'order_id,seq,day\n1,1,13/02/2026\n');
    await z.source.write('2025/03/02/b.csv', 'order_id,seq,day\n2,1,01/02/2026\n');
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('"01/02/2026" of column "day" reads two ways');
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/b.csv`,
      column: 'day',
      line: 2,
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
  });

  it('an orderBy column that would compare as text is refused, naming it; declared in source.columns, seq 10 beats seq 9', async () => {
    // The first file alone is the first batch, and its seq is empty: nothing says seq is a number.
    const z = await zone({ maxFilesPerBatch: 1 });
    await z.source.write('2025/03/01/a.csv', 'order_id,seq,note\n1,,first\n');
    await z.source.write('2025/03/02/b.csv', 'order_id,seq,note\n1,9,nine\n1,10,ten\n');
    const err = await failure(run(z.setup));
    expect(err.message).toContain('orderBy column "seq" would be compared as text');
    expect(err.message).toContain('source.columns');
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();

    const declared = await zone({ maxFilesPerBatch: 1 }, { columns: { seq: 'long' } });
    await declared.source.write('2025/03/01/a.csv', 'order_id,seq,note\n1,,first\n');
    await declared.source.write('2025/03/02/b.csv', 'order_id,seq,note\n1,9,nine\n1,10,ten\n');
    expect(await run(declared.setup)).toMatchObject({ status: 'succeeded' });
    expect(await tableTypes(declared.setup)).toMatchObject({ seq: 'long' });
    expect(await tableRows(session, declared.setup, 'order_id')).toEqual([
      { order_id: '1', seq: '10', note: 'ten' },
    ]);
  });

  it('source.columns types a column exactly, and a value that does not fit fails naming file, line and column', async () => {
    const z = await zone({}, { columns: { order_id: 'decimal(20,0)', amount: 'decimal(10,2)' } });
    await z.source.write('2025/03/01/a.csv', 'order_id,seq,amount\n12345678901234567890,1,1.50\n');
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({
      order_id: 'decimal(20,0)',
      amount: 'decimal(10,2)',
    });
    await z.source.write('2025/03/02/b.csv', 'order_id,seq,amount\n5,2,1.505\n');
    const err = await failure(run(z.setup));
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/b.csv`,
      column: 'amount',
      line: 2,
    });
  });
});

describe('a column declared timestamp_ntz', () => {
  it('is created timestamp_ntz, in a new table (Parquet) and as a new column (CSV), and later files load into it unchanged', async () => {
    const z = await zone({}, { columns: { local_at: 'timestamp_ntz', later_at: 'timestamp_ntz' } });
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, TIMESTAMP '1969-12-31 23:59:59.999999' AS local_at`,
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({ local_at: 'timestamp_ntz' });
    await z.source.write(
      '2025/03/02/b.csv',
      'order_id,seq,local_at,later_at\n1,2,2025-03-02 10:30:00,2025-03-02 11:00:00.5\n2,1,1900-01-01 00:00:00,\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1, updated: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({
      local_at: 'timestamp_ntz',
      later_at: 'timestamp_ntz',
    });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['order_id'], r['local_at'], r['later_at']])).toEqual([
      ['1', '2025-03-02 10:30:00', '2025-03-02 11:00:00.5'],
      ['2', '1900-01-01 00:00:00', null],
    ]);
  });

  it('a JSON timestamp text with an offset is refused naming file, line and column (DuckDB would store its UTC time); without one it is stored as written', async () => {
    const z = await zone({}, { columns: { local_at: 'timestamp_ntz' } });
    // Every text of the file has the same form, so DuckDB's JSON reader detects a timestamp and converts it to UTC (the first record is on line 2).
    await z.source.write(
      '2025/03/01/zoned.ndjson',
      '\n{"order_id": 1, "seq": 1, "local_at": "2025-03-01T09:00:00+02:00"}\n{"order_id": 2, "seq": 1, "local_at": "2025-03-01T12:30:00+02:00"}\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/zoned.ndjson`,
      line: 2,
      row: 1,
      column: 'local_at',
      value: '2025-03-01T09:00:00+02:00',
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
    // Texts of two forms: DuckDB leaves them text, and the CSV rule refuses the offset, also naming the line.
    await z.source.write(
      '2025/03/01/zoned.ndjson',
      '{"order_id": 1, "seq": 1, "local_at": "2025-03-01 09:00:00"}\n\n{"order_id": 2, "seq": 1, "local_at": "2025-03-01T12:30:00+02:00"}\n',
    );
    const mixed = await failure(run(z.setup));
    expect((mixed as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/zoned.ndjson`,
      line: 3,
      row: 2,
      column: 'local_at',
    });
    expect(mixed.message).toContain('line 3 (data row 2)');
    await z.source.write(
      '2025/03/01/zoned.ndjson',
      '{"order_id": 1, "seq": 1, "local_at": "2025-03-01T09:00:00"}\n{"order_id": 2, "seq": 1, "local_at": "2025-03-01T12:30:00"}\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['local_at'])).toEqual([
      '2025-03-01 09:00:00',
      '2025-03-01 12:30:00',
    ]);
  });
});

describe('a Parquet timestamp: isAdjustedToUTC says wall clock or instant', () => {
  // DuckDB writes TIMESTAMP with isAdjustedToUTC=false and TIMESTAMPTZ with isAdjustedToUTC=true.
  const naive = `TIMESTAMP '1969-12-31 23:59:59.999999'`;

  it('a naive one (not adjusted to UTC) creates a timestamp_ntz column, stored exactly, with the timestampNtz feature', async () => {
    const z = await zone();
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, ${naive} AS local_at, TIMESTAMPTZ '2025-03-01 10:00:00+02' AS at`,
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({ local_at: 'timestamp_ntz', at: 'timestamp' });
    const { snapshot } = await readTarget(session, z.setup);
    expect(snapshot!.protocol.readerFeatures).toContain('timestampNtz');
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => r['local_at'])).toEqual(['1969-12-31 23:59:59.999999']);
  });

  it('declared timestamp in source.columns, a naive one is taken as UTC and the column is timestamp', async () => {
    const z = await zone({}, { columns: { local_at: 'timestamp' } });
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, ${naive} AS local_at`,
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({ local_at: 'timestamp' });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => r['local_at'])).toEqual(['1969-12-31 23:59:59.999999+00']);
  });

  it('a naive one into an existing timestamp column loads as UTC (the table declares the column)', async () => {
    const z = await zone();
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, TIMESTAMPTZ '2025-03-01 10:00:00+00' AS at`,
    );
    await run(z.setup);
    await putParquet(
      z.source,
      session,
      '2025/03/02/b.parquet',
      `SELECT 1::BIGINT AS order_id, 2::BIGINT AS seq, ${naive} AS at`,
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', updated: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({ at: 'timestamp' });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['at'])).toEqual([
      '1969-12-31 23:59:59.999999+00',
    ]);
  });

  it('a new column of a later batch (schemaEvolution addColumns) is timestamp_ntz, and the protocol gains timestampNtz', async () => {
    const z = await zone({ schemaEvolution: 'addColumns' });
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq`,
    );
    await run(z.setup);
    expect(
      (await readTarget(session, z.setup)).snapshot!.protocol.readerFeatures ?? [],
    ).not.toContain('timestampNtz');
    await putParquet(
      z.source,
      session,
      '2025/03/02/b.parquet',
      `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, ${naive} AS local_at`,
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({ local_at: 'timestamp_ntz' });
    expect((await readTarget(session, z.setup)).snapshot!.protocol.readerFeatures).toContain(
      'timestampNtz',
    );
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['local_at'])).toEqual([
      null,
      '1969-12-31 23:59:59.999999',
    ]);
  });

  it('a UTC-adjusted one into a timestamp_ntz column is refused naming file and column, nothing committed; declared timestamp_ntz it stores the UTC wall clock', async () => {
    const z = await zone();
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, ${naive} AS local_at`,
    );
    await run(z.setup);
    await putParquet(
      z.source,
      session,
      '2025/03/02/zoned.parquet',
      `SELECT 1::BIGINT AS order_id, 2::BIGINT AS seq, TIMESTAMPTZ '2025-03-02 10:30:00+02' AS local_at`,
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(SchemaError);
    expect((err as SchemaError).context).toMatchObject({
      key: `${z.uri}2025/03/02/zoned.parquet`,
      column: 'local_at',
    });
    expect(err.message).toContain('UTC-adjusted Parquet timestamp');
    expect(err.message).toContain('local_at: timestamp_ntz in source.columns');
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
    const declared = declaring(z.setup, { local_at: 'timestamp_ntz' });
    expect(await run(declared)).toMatchObject({ status: 'succeeded', updated: 1 });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['local_at'])).toEqual([
      '2025-03-02 08:30:00',
    ]);
  });

  it('a UTC-adjusted one beside a wall clock in one batch, for a new column, is refused naming the file; declared timestamp the wall clock is UTC', async () => {
    // Read as one, the column would be timestamp_ntz and the instant its UTC wall clock, unsaid.
    const z = await zone();
    await putParquet(
      z.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, ${naive} AS local_at`,
    );
    await putParquet(
      z.source,
      session,
      '2025/03/01/zoned.parquet',
      `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, TIMESTAMPTZ '2025-03-02 10:30:00+02' AS local_at`,
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(SchemaError);
    expect((err as SchemaError).context).toMatchObject({
      key: `${z.uri}2025/03/01/zoned.parquet`,
      column: 'local_at',
    });
    expect(err.message).toContain(
      'another Parquet file of the batch holds "local_at" as a wall clock',
    );
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
    const declared = declaring(z.setup, { local_at: 'timestamp' });
    expect(await run(declared)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect(await tableTypes(z.setup)).toMatchObject({ local_at: 'timestamp' });
  });

  it('nanoseconds (TIMESTAMP_NANOS) are refused naming file, row and column, into a new table and into timestamp and timestamp_ntz columns; whole microseconds load', async () => {
    // Delta timestamps hold microseconds: DuckDB's cast would drop the last three digits.
    const nanos = `TIMESTAMP_NS '2026-01-01 00:00:00.123456789'`;
    const select = (seq: number, at: string) =>
      `SELECT * FROM (VALUES (1::BIGINT, ${seq}::BIGINT, ${at}), (2::BIGINT, ${seq}::BIGINT, ${nanos})) AS t(order_id, seq, local_at)`;
    const z = await zone();
    await putParquet(z.source, session, '2025/03/01/ns.parquet', select(1, nanos));
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/ns.parquet`,
      column: 'local_at',
      row: 1,
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();

    for (const type of ['timestamp_ntz', 'timestamp']) {
      const t = await zone({}, { columns: { local_at: type } });
      const micros = `TIMESTAMP_NS '2026-01-01 00:00:00.123456'`;
      await putParquet(
        t.source,
        session,
        '2025/03/01/a.parquet',
        select(1, micros).split(', (2')[0] + ') AS t(order_id, seq, local_at)',
      );
      expect(await run(t.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
      await putParquet(t.source, session, '2025/03/02/ns.parquet', select(2, micros));
      const e = await failure(run(t.setup));
      expect(e).toBeInstanceOf(BadFileError);
      expect((e as BadFileError).context).toMatchObject({ column: 'local_at', row: 2 });
      expect((await tableRows(session, t.setup, 'order_id')).map((r) => r['local_at'])).toEqual([
        type === 'timestamp' ? '2026-01-01 00:00:00.123456+00' : '2026-01-01 00:00:00.123456',
      ]);
    }
  });

  it("an INT96 one (Spark's legacy encoding, no isAdjustedToUTC flag) is an instant: a new table's column is timestamp; into a timestamp_ntz column it is refused", async () => {
    // Spark reads INT96 as an instant (TimestampType); DuckDB reads it as a naive TIMESTAMP.
    const int96 = await readFile(
      join(
        sharedTable('partition-timestamp-int96'),
        'part=2020-01-01 08%3A09%3A10.001/part-00000-bd889aef-417c-4493-b5f7-a9884ba4b247.c000.snappy.parquet',
      ),
    );
    const z = await zone({
      target: { ...mergeTarget(await tempDir('types-t', dirs)), key: ['id'], orderBy: 'id' },
    });
    await z.source.write('2025/03/01/spark.parquet', int96);
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await tableTypes(z.setup)).toMatchObject({ time: 'timestamp' });
    expect((await tableRows(session, z.setup, 'id')).map((r) => r['time'])).toEqual([
      '2020-02-01 08:09:10+00',
    ]);

    const ntz = await zone(
      { target: { ...mergeTarget(await tempDir('types-t', dirs)), key: ['id'], orderBy: 'id' } },
      { columns: { time: 'timestamp_ntz' } },
    );
    await putParquet(
      ntz.source,
      session,
      '2025/03/01/a.parquet',
      `SELECT 1 AS id, ${naive} AS time`,
    );
    await run(ntz.setup);
    await ntz.source.write('2025/03/02/spark.parquet', int96);
    const undeclared = {
      ...ntz.setup,
      job: { ...ntz.setup.job, source: { ...ntz.setup.job.source, columns: undefined } },
    };
    const err = await failure(run(undeclared));
    expect(err).toBeInstanceOf(SchemaError);
    expect((err as SchemaError).context).toMatchObject({
      key: `${ntz.uri}2025/03/02/spark.parquet`,
      column: 'time',
    });
  });

  it('an INT96 one with nanoseconds (Impala, pyarrow) is refused naming file, row and column; whole microseconds load exactly', async () => {
    // DuckDB reads INT96 in microseconds: without the check …001000123 was stored as …001, exit 0.
    const fixture = async (name: string) =>
      new Uint8Array(await readFile(new URL(`../../fixtures/parquet/${name}`, import.meta.url)));
    const z = await zone();
    await z.source.write('2025/03/01/micros.parquet', await fixture('int96-micros.parquet'));
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 4 });
    expect(await tableTypes(z.setup)).toMatchObject({ at: 'timestamp' });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['at'])).toEqual([
      '2026-01-01 00:00:00.001+00',
      '2026-01-01 00:00:00.123456+00',
      '1969-12-31 23:59:59.999999+00',
      null,
    ]);
    await z.source.write('2025/03/02/nanos.parquet', await fixture('int96-nanos.parquet'));
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/nanos.parquet`,
      column: 'at',
      row: 2,
    });
    expect(err.message).toContain('2026-01-01 00:00:00.001000123');
    expect(err.message).toContain('INT96');
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });

  it('UTC-adjusted TIMESTAMP(NANOS) (pandas datetime64[ns, UTC]) with nanoseconds is refused naming file, row and column; whole microseconds load as the same instants', async () => {
    // DuckDB reads such a column in microseconds: without the check the last digits vanished
    // with exit 0. DuckDB writes TIMESTAMP_NS as not adjusted; the footer's flag is set here.
    const utcNanos = async (key: string, select: string) => {
      const dir = await tempDir('types-utc-ns', dirs);
      await writeFile(join(dir, 'naive.parquet'), await parquetOf(session, select));
      await copyWithNanosUtcFlag(join(dir, 'naive.parquet'), join(dir, 'utc.parquet'), true);
      await z.source.write(key, new Uint8Array(await readFile(join(dir, 'utc.parquet'))));
    };
    const rows = (seq: number, ...ats: string[]) =>
      `SELECT * FROM (VALUES ${ats.map((at, i) => `(${i + 1}::BIGINT, ${seq}::BIGINT, TIMESTAMP_NS '${at}')`).join(', ')}) AS t(order_id, seq, "at")`;
    const z = await zone();
    await utcNanos(
      '2025/03/01/a.parquet',
      rows(1, '2026-01-01 00:00:00.123456', '2026-01-01 00:00:00.5'),
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['at'])).toEqual([
      '2026-01-01 00:00:00.123456+00',
      '2026-01-01 00:00:00.5+00',
    ]);
    await utcNanos(
      '2025/03/02/ns.parquet',
      rows(2, '2026-01-02 00:00:00', '2026-01-02 00:00:00.123456789'),
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/ns.parquet`,
      column: 'at',
      row: 2,
    });
    expect(err.message).toContain('2026-01-02 00:00:00.123456789');
    expect(err.message).toContain('UTC-adjusted Parquet TIMESTAMP(NANOS)');
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });

  it('CSV and JSON texts without an offset are not concerned: UTC, a timestamp column', async () => {
    const z = await zone();
    await z.source.write('2025/03/01/a.csv', 'order_id,seq,at\n1,1,2025-03-01 10:30:00\n');
    await z.source.write(
      '2025/03/01/b.ndjson',
      '{"order_id": 2, "seq": 1, "at": "2025-03-01 11:30:00", "jat": "2025-03-01 12:30:00"}\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect(await tableTypes(z.setup)).toMatchObject({ at: 'timestamp', jat: 'timestamp' });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => [r['at'], r['jat']])).toEqual(
      [
        ['2025-03-01 10:30:00+00', null],
        ['2025-03-01 11:30:00+00', '2025-03-01 12:30:00+00'],
      ],
    );
  });
});

describe('JSON date and timestamp texts that DuckDB detects', () => {
  it('are refused naming file, line and column unless they spell the value exactly, in a new table and into an existing column', async () => {
    // Without the check " 2026-01-05" and "2026-01-05 1:2:3" loaded as 2026-01-05 and 01:02:03, exit 0.
    const z = await zone();
    const write = (key: string, ...days: string[]) =>
      z.source.write(
        key,
        days
          .map((d, i) => `{"order_id": ${i + 1}, "seq": 1, "day": "${d}", "at": "${d}T10:00:00Z"}`)
          .join('\n') + '\n',
      );
    await write('2025/03/01/a.ndjson', '2026-01-05', ' 2026-01-06');
    const blank = await failure(run(z.setup));
    expect(blank).toBeInstanceOf(BadFileError);
    expect((blank as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/a.ndjson`,
      line: 2,
      column: 'day',
      value: ' 2026-01-06',
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
    await write('2025/03/01/a.ndjson', '2026-01-05', '2026-01-06');
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect(await tableTypes(z.setup)).toMatchObject({ day: 'date', at: 'timestamp' });
    await z.source.write(
      '2025/03/02/b.ndjson',
      '{"order_id": 3, "seq": 1, "day": "2026-01-07", "at": "2026-01-07 1:2:3"}\n',
    );
    const short = await failure(run(z.setup));
    expect((short as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/b.ndjson`,
      line: 1,
      column: 'at',
      value: '2026-01-07 1:2:3',
    });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['day'])).toEqual([
      '2026-01-05',
      '2026-01-06',
    ]);
  });
});

describe('JSON date and timestamp texts that DuckDB detects inside a struct or a list', () => {
  it('are refused naming file, line and path unless they spell the value exactly, in a new table and into an existing one', async () => {
    // Without the check {"o":{"x":"2026-01-05 "}} loaded as the date 2026-01-05, exit 0; likewise in a list.
    const z = await zone();
    const line = (id: number, x: string, l: string[], d: string, at = `${x}T10:00:00Z`) =>
      JSON.stringify({ order_id: id, seq: 1, o: { x, n: id, at }, l, ls: [{ d, k: 'a' }] });
    const file = '2025/03/01/a.ndjson';
    const refused = async (key: string, context: Record<string, unknown>) => {
      const err = await failure(run(z.setup));
      expect(err).toBeInstanceOf(BadFileError);
      expect((err as BadFileError).context).toMatchObject({ key: `${z.uri}${key}`, ...context });
    };
    const good = line(1, '2026-01-05', ['2026-01-05'], '2026-01-05');
    await z.source.write(
      file,
      `${good}\n${line(2, '2026-01-06 ', ['2026-01-06'], '2026-01-06')}\n`,
    );
    await refused(file, { line: 2, column: 'o.x', value: '2026-01-06 ' });
    await z.source.write(
      file,
      `${good}\n${line(2, '2026-01-06', ['2026-01-06', ' 2026-01-07'], '2026-01-06')}\n`,
    );
    await refused(file, { line: 2, column: 'l', value: ' 2026-01-07' });
    await z.source.write(
      file,
      `${good}\n${line(2, '2026-01-06', ['2026-01-06'], ' 2026-01-06')}\n`,
    );
    await refused(file, { line: 2, column: 'ls.d', value: ' 2026-01-06' });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
    await z.source.write(file, `${good}\n${line(2, '2026-01-06', ['2026-01-06'], '2026-01-06')}\n`);
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    expect(await tableTypes(z.setup)).toMatchObject({
      o: {
        type: 'struct',
        fields: [{ name: 'x', type: 'date' }, { name: 'n' }, { name: 'at', type: 'timestamp' }],
      },
      l: { type: 'array', elementType: 'date' },
      ls: { type: 'array', elementType: { fields: [{ name: 'd', type: 'date' }, { name: 'k' }] } },
    });
    // Into the existing table's date and timestamp fields, by their rule.
    const next = '2025/03/02/b.ndjson';
    await z.source.write(
      next,
      `${line(3, '2026-01-07', ['2026-01-07'], '2026-01-07')}\n${line(4, '2026-01-08', ['2026-01-08'], '2026-01-08 ')}\n`,
    );
    await refused(next, { line: 2, column: 'ls.d', value: '2026-01-08 ' });
    await z.source.write(
      next,
      `${line(3, '2026-01-07', ['2026-01-07'], '2026-01-07', '2026-01-07 1:2:3')}\n`,
    );
    await refused(next, { line: 1, column: 'o.at', value: '2026-01-07 1:2:3' });
    // A record spread over lines is named by its row.
    await z.source.write(next, `${line(3, '2026-01-07', ['2026-01-07'], '2026-01-07')}\n`);
    const pretty = '2025/03/02/c.json';
    await z.source.write(
      pretty,
      JSON.stringify(
        [
          JSON.parse(line(5, '2026-01-07', [], '2026-01-07')),
          JSON.parse(line(6, '2026-01-07', ['2026-01-07 '], '2026-01-07')),
        ],
        null,
        2,
      ),
    );
    const spread = await failure(run(z.setup));
    expect((spread as BadFileError).context).toEqual({
      key: `${z.uri}${pretty}`,
      row: 2,
      column: 'l',
      value: '2026-01-07 ',
    });
    await z.source.delete([pretty]);
    // A column the table lacks keeps DuckDB's type (a date), so its rule is a date's, at the top too.
    await z.source.write(next, `${JSON.stringify({ order_id: 3, seq: 1, due: ' 2026-01-09' })}\n`);
    await refused(next, { line: 1, column: 'due', value: ' 2026-01-09' });
    await z.source.write(
      next,
      `${JSON.stringify({ order_id: 3, seq: 1, o: { x: '2026-01-07', y: '2026-01-09 ' } })}\n`,
    );
    await refused(next, { line: 1, column: 'o.y', value: '2026-01-09 ' });
    await z.source.write(next, `${line(3, '2026-01-07', ['2026-01-07'], '2026-01-07')}\n`);
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['o'], r['l'], r['ls']])).toEqual([
      [
        { x: '2026-01-05', n: '1', at: '2026-01-05 10:00:00+00' },
        ['2026-01-05'],
        [{ d: '2026-01-05', k: 'a' }],
      ],
      [
        { x: '2026-01-06', n: '2', at: '2026-01-06 10:00:00+00' },
        ['2026-01-06'],
        [{ d: '2026-01-06', k: 'a' }],
      ],
      [
        { x: '2026-01-07', n: '3', at: '2026-01-07 10:00:00+00' },
        ['2026-01-07'],
        [{ d: '2026-01-07', k: 'a' }],
      ],
    ]);
  });
});

describe('source.columns against an existing table', () => {
  it('a declared type the table column does not have is a config error naming both; nothing loads', async () => {
    const z = await typedTable();
    const declared = declaring(z.setup, { seq: 'string' });
    await z.source.write('2025/03/02/a.csv', 'order_id,seq\n2,2\n');
    const err = await failure(run(declared));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(
      'source.columns.seq is string, but the table\'s column "seq" is long',
    );
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });
});

describe('column names mean one thing each', () => {
  it('a source column named like a lineage column is refused naming the file and the column; nothing is committed', async () => {
    const z = await zone();
    await z.source.write('2025/03/01/a.csv', 'order_id,seq,_source_file\n1,1,upstream.csv\n');
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain(
      '"_source_file", a name tidemark reserves for its lineage columns',
    );
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/a.csv`,
      column: '_source_file',
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
  });

  it('names that differ only by case in one file fail with both names; across files they are one column', async () => {
    const z = await zone({}, { format: 'ndjson' });
    await z.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"Amount":10}\n{"order_id":2,"seq":1,"amount":20}\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('columns "Amount" and "amount", whose names differ only by case');
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();

    const across = await zone({}, { format: 'ndjson' });
    await across.source.write('2025/03/01/a.ndjson', '{"order_id":1,"seq":1,"Amount":10}\n');
    await across.source.write('2025/03/02/b.ndjson', '{"order_id":2,"seq":1,"amount":20}\n');
    expect(await run(across.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    const rows = await tableRows(session, across.setup, 'order_id');
    expect(rows.map((r) => r['Amount'])).toEqual(['10', '20']);
  });

  it('a key twice in one JSON object is refused naming the line and the key, without the record (DuckDB quotes it whole)', async () => {
    for (const record of [
      '{"order_id":2,"seq":1,"a":"secret","a":2}',
      '{"order_id":2,"seq":1,"s":{"a":"secret","a":2}}',
    ]) {
      const z = await zone({}, { format: 'ndjson' });
      await z.source.write('2025/03/01/a.ndjson', `{"order_id":1,"seq":1}\n${record}\n`);
      const err = await failure(run(z.setup));
      expect(err).toBeInstanceOf(BadFileError);
      expect((err as BadFileError).context).toMatchObject({
        key: `${z.uri}2025/03/01/a.ndjson`,
        line: 2,
        column: 'a',
      });
      expect(err.message).toContain('line 2: an object has the key "a" twice');
      expect(err.message).not.toContain('secret');
    }
  });

  it('nested keys that differ only by case: in one file refused naming both fields and the line; across the files of one batch one field', async () => {
    const z = await zone({}, { format: 'ndjson' });
    await z.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"s":{"a":1}}\n{"order_id":2,"seq":1,"s":{"A":2}}\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/a.ndjson`,
      line: 2,
      column: 's.A',
    });
    expect(err.message).toContain(
      'line 2, it has fields "s.a" and "s.A", whose names differ only by case',
    );
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();

    // A MAP's keys that differ by case in the same file are not the fields DuckDB stopped at.
    const beside = await zone({}, { format: 'ndjson' });
    const keys = Object.fromEntries(Array.from({ length: 250 }, (_, i) => [`k${i}`, i]));
    await beside.source.write(
      '2025/03/01/a.ndjson',
      `${JSON.stringify({ order_id: 1, seq: 1, m: { ...keys, K1: 5 }, s: { a: 1 } })}\n` +
        `${JSON.stringify({ order_id: 2, seq: 1, s: { A: 2 } })}\n`,
    );
    const named = await failure(run(beside.setup));
    expect((named as BadFileError).context).toMatchObject({ line: 2, column: 's.A' });

    // Before, one bulk read of both files stopped at DuckDB's 'Duplicate name "A" in struct'.
    const across = await zone({}, { format: 'ndjson' });
    await across.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"s":{"a":1},"ls":[{"d":1}]}\n',
    );
    await across.source.write(
      '2025/03/01/b.ndjson',
      '{"order_id":2,"seq":1,"s":{"A":2},"ls":[{"D":2}]}\n',
    );
    expect(await run(across.setup)).toMatchObject({ status: 'succeeded', inserted: 2, batches: 1 });
    const rows = await tableRows(session, across.setup, 'order_id');
    expect(rows.map((r) => [r['s'], r['ls']])).toEqual([
      [{ a: '1' }, [{ d: '1' }]],
      [{ a: '2' }, [{ d: '2' }]],
    ]);

    // An object of many keys is a MAP to DuckDB: its keys are data, and may differ only by case.
    const maps = await zone({}, { format: 'ndjson' });
    const counts = Object.fromEntries(Array.from({ length: 250 }, (_, i) => [`k${i}`, i]));
    for (const [i, name] of ['a', 'b'].entries())
      await maps.source.write(
        `2025/03/01/${name}.ndjson`,
        `${JSON.stringify({ order_id: i + 1, seq: 1, m: { ...counts, K1: 1000 + i } })}\n`,
      );
    expect(await run(maps.setup)).toMatchObject({ status: 'succeeded', inserted: 2, batches: 1 });
    const mapped = (await tableRows(session, maps.setup, 'order_id')).map((r) => {
      const m = new Map((r['m'] as { key: string; value: unknown }[]).map((e) => [e.key, e.value]));
      return [m.get('K1'), m.get('k1'), m.size];
    });
    expect(mapped).toEqual([
      ['1000', '1', 251],
      ['1001', '1', 251],
    ]);
  });

  it('a CSV header naming one column twice is refused naming the file, the name and both fields, not loaded as x and x_1 (nothing committed)', async () => {
    // DuckDB renames the second `x` to `x_1`, which a file with a real `x_1` column would share.
    for (const header of ['order_id,seq,x,x', 'order_id,seq,x," x"']) {
      const z = await zone();
      await z.source.write('2025/03/01/a.csv', 'order_id,seq,x_1\n1,1,real\n');
      await z.source.write('2025/03/01/b.csv', `${header}\n2,1,first,second\n`);
      const err = await failure(run(z.setup));
      expect(err).toBeInstanceOf(BadFileError);
      expect((err as BadFileError).context).toMatchObject({
        key: `${z.uri}2025/03/01/b.csv`,
        column: 'x',
        line: 1,
      });
      expect(err.message).toContain('names column "x" twice (fields 3 and 4)');
      expect((await readTarget(session, z.setup)).snapshot).toBeNull();
    }
    const cased = await zone();
    await cased.source.write('2025/03/01/a.csv', 'order_id,seq,x,X_1,x\n1,1,a,b,c\n');
    const err = await failure(run(cased.setup));
    expect(err.message).toContain('names column "x" twice (fields 3 and 5)');
  });
});

describe('JSON numbers: stored as the file spells them, or refused naming file, line and column', () => {
  it('ids beyond 64 bits are refused (DuckDB would read them as doubles and fold them into one key); as strings declared decimal(38,0) they load as three keys', async () => {
    const z = await zone({}, { format: 'ndjson' });
    const ids = ['12345678901234567890', '12345678901234567891', '12345678901234567892'];
    await z.source.write(
      '2025/03/01/a.ndjson',
      ids.map((id) => `{"order_id":${id},"seq":1}`).join('\n') + '\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/a.ndjson`,
      line: 1,
      column: 'order_id',
      value: ids[0],
    });
    expect(err.message).toContain('beyond the 64-bit integer range');
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();

    const declared = await zone({}, { format: 'ndjson', columns: { order_id: 'decimal(38,0)' } });
    await declared.source.write(
      '2025/03/01/a.ndjson',
      ids.map((id) => `{"order_id":"${id}","seq":1}`).join('\n') + '\n',
    );
    expect(await run(declared.setup)).toMatchObject({
      status: 'succeeded',
      rowsAfterDedupe: 3,
      inserted: 3,
    });
    expect(
      (await tableRows(session, declared.setup, 'order_id')).map((r) => String(r['order_id'])),
    ).toEqual(ids);
  });

  it('a decimal of more than 15 digits, or a long integer in a column read as DOUBLE, is refused; numbers a double holds load', async () => {
    const digits = await zone({}, { format: 'ndjson' });
    await digits.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"amount":1.5}\n{"order_id":2,"seq":1,"amount":12345678901234567890.123456789}\n',
    );
    const err = await failure(run(digits.setup));
    expect((err as BadFileError).context).toMatchObject({
      line: 2,
      column: 'amount',
      value: '12345678901234567890.123456789',
    });
    expect(err.message).toContain('15 significant digits, not its 29');

    // One file's integers, another's decimals: the new column would be DOUBLE, and 9007199254740993 would become …992.
    const mixed = await zone({}, { format: 'ndjson' });
    await mixed.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"amount":9007199254740993}\n',
    );
    await mixed.source.write('2025/03/02/b.ndjson', '{"order_id":2,"seq":1,"amount":0.5}\n');
    const across = await failure(run(mixed.setup));
    expect((across as BadFileError).context).toMatchObject({
      key: `${mixed.uri}2025/03/01/a.ndjson`,
      line: 1,
      column: 'amount',
      value: '9007199254740993',
    });
    expect(across.message).toContain(
      `also holds 0.5 (in ${mixed.uri}2025/03/02/b.ndjson on line 1), so it is read as DOUBLE`,
    );

    const nested = await zone({}, { format: 'ndjson' });
    await nested.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"obj":{"x":[0.1, 0.12345678901234567]}}\n',
    );
    expect(((await failure(run(nested.setup))) as BadFileError).context).toMatchObject({
      line: 1,
      column: 'obj.x',
      value: '0.12345678901234567',
    });

    const fine = await zone({}, { format: 'json' });
    await fine.source.write(
      '2025/03/01/a.json',
      '[\n {"order_id": 1, "seq": 1, "amount": 1e3, "big": 9223372036854775807},\n {"order_id": 2, "seq": 1, "amount": 0.1, "big": -9223372036854775808}\n]\n',
    );
    expect(await run(fine.setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    const rows = await tableRows(session, fine.setup, 'order_id');
    expect(rows.map((r) => [Number(r['amount']), String(r['big'])])).toEqual([
      [1000, '9223372036854775807'],
      [0.1, '-9223372036854775808'],
    ]);
  });
});

describe('JSON values into string columns: stored as the file spells them, or refused naming file, line and column', () => {
  it("into a table's string column, numbers, booleans and objects keep their text (1e3 stays 1e3, never 1000.0)", async () => {
    const z = await typedTable();
    const notes = ['1e3', '0.10', '-0', 'true', '{"a": 1.50}', '[1E+2, "x"]', '"text"'];
    await z.source.write(
      '2025/03/02/a.ndjson',
      notes.map((note, i) => `{"order_id":${i + 2},"seq":1,"note":${note}}`).join('\n') + '\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: notes.length });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => r['note'])).toEqual(['a', ...notes.slice(0, -1), 'text']);
  });

  it('a key declared string in source.columns: 1e3, 1000.0 and an id beyond 64 bits are keys as written', async () => {
    const z = await zone({}, { format: 'ndjson', columns: { order_id: 'string' } });
    const ids = ['1e3', '1000.0', '1000', '12345678901234567890'];
    await z.source.write(
      '2025/03/01/a.ndjson',
      ids.map((id) => `{"order_id":${id},"seq":1}`).join('\n') + '\n',
    );
    expect(await run(z.setup)).toMatchObject({
      status: 'succeeded',
      rowsAfterDedupe: 4,
      inserted: 4,
    });
    expect(
      (await tableRows(session, z.setup, 'order_id')).map((r) => r['order_id']).sort(),
    ).toEqual([...ids].sort());
  });

  it('a column that is text because other values or files hold text keeps every number as written, and its texts without quotes', async () => {
    const z = await zone({}, { format: 'ndjson' });
    await z.source.write('2025/03/01/a.ndjson', '{"order_id":1,"seq":1,"ref":0.10}\n');
    await z.source.write('2025/03/01/b.ndjson', '{"order_id":2,"seq":1,"ref":"A-7"}\n');
    await z.source.write(
      '2025/03/01/c.ndjson',
      '{"order_id":3,"seq":1,"ref":"x"}\n{"order_id":4,"seq":1,"ref":2.50}\n{"order_id":5,"seq":1,"ref":false}\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 5 });
    expect((await tableRows(session, z.setup, 'order_id')).map((r) => r['ref'])).toEqual([
      '0.10',
      'A-7',
      'x',
      '2.50',
      'false',
    ]);
  });

  it('a number in a string field of a struct is refused naming file, line and field; nothing is committed', async () => {
    const z = await zone({}, { format: 'ndjson' });
    await z.source.write(
      '2025/03/01/a.ndjson',
      '{"order_id":1,"seq":1,"obj":{"s":"a"}}\n{"order_id":2,"seq":1,"obj":{"s":1.50}}\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/a.ndjson`,
      line: 2,
      column: 'obj.s',
      value: '1.50',
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
  });
});

describe('a Parquet decimal wider than 38 digits (pyarrow decimal256)', () => {
  it('is refused naming the file and the column, nothing committed (DuckDB reads it as a wrong double)', async () => {
    // Without the check the table held amount 72057594037927940 for the file's 1.00, exit 0.
    const file = await readFile(
      new URL('../../fixtures/parquet/decimal256.parquet', import.meta.url),
    );
    const z = await zone();
    await z.source.write('2025/03/01/wide.parquet', file);
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/01/wide.parquet`,
      column: 'amount',
      type: 'decimal(40,2)',
    });
    expect((await readTarget(session, z.setup)).snapshot).toBeNull();
  });
});

describe('Parquet struct fields whose names differ only by case (written by pyarrow)', () => {
  it.each([
    ['struct-case.parquet', 's.a', 's.A'],
    ['list-struct-case.parquet', 'ls.list.element.d', 'ls.list.element.D'],
  ])(
    '%s is refused naming both fields, nothing committed (DuckDB renamed the second A_1)',
    async (name, first, second) => {
      // Without the check the table held s = {a: 1, A_1: 2}, a field the file does not have, exit 0.
      const file = await readFile(new URL(`../../fixtures/parquet/${name}`, import.meta.url));
      const z = await zone();
      await z.source.write(`2025/03/01/${name}`, file);
      const err = await failure(run(z.setup));
      expect(err).toBeInstanceOf(BadFileError);
      expect((err as BadFileError).context).toMatchObject({
        key: `${z.uri}2025/03/01/${name}`,
        column: second,
        columns: [first, second],
      });
      expect(err.message).toContain('whose names differ only by case');
      expect((await readTarget(session, z.setup)).snapshot).toBeNull();
    },
  );
});
