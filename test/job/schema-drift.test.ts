/**
 * Schema drift through the real job (docs/concepts.md, Schema drift): new columns in new files are added to
 * the table in the commit of their data (addColumns) or refuse the batch naming columns and files
 * (fail); CSV files whose inferred types differ load in the table's types; a value that does not
 * fit fails naming file, column and row, with nothing committed and the watermark unmoved;
 * narrower types widen, and the table's column types never change. Local folders as source and
 * target, and the key cases again with source and table on s3rver.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS } from '../../scripts/lib/embedded-s3.js';
import { BadFileError, SchemaError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { commitOf, putParquet, tableRows } from './drift-helpers.js';
import {
  DuckSession,
  makeConfig,
  mergeTarget,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
} from './helpers.js';
import { failure } from '../helpers/cli.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

/** A local landing zone and a job on it; `extra` overrides job fields. */
async function zone(extra: Record<string, unknown> = {}, target?: Record<string, unknown>) {
  const sourceDir = await tempDir('drift-src', dirs);
  const source = new LocalStorage(sourceDir);
  const setup = makeConfig({
    source: { uri: sourceDir, discover: byDay },
    target: target ?? mergeTarget(await tempDir('drift-t', dirs)),
    ...extra,
  });
  return { source, setup, uri: `${source.uri}` };
}

describe("schemaEvolution: 'addColumns' (the default)", () => {
  it('adds the new columns of new files in the commit of their data; earlier rows read NULL', async () => {
    const z = await zone({ maxFilesPerBatch: 1 });
    await z.source.write('2025/03/01/a.csv', 'order_id,status,seq\n1,placed,1\n2,placed,1\n');
    expect((await run(z.setup)).tableVersion).toBe(0);
    // Two new files, one batch each: the second batch plans on the schema the first committed.
    await z.source.write('2025/03/02/b.csv', 'order_id,status,seq,coupon\n2,paid,2,SPRING\n');
    await z.source.write(
      '2025/03/03/c.csv',
      'order_id,status,seq,coupon,channel\n3,placed,1,,web\n',
    );
    const report = await run(z.setup);
    expect(report).toMatchObject({
      status: 'succeeded',
      commits: 2,
      tableVersion: 2,
      watermark: '2025-03-03',
    });
    const v1 = await commitOf(z.setup, 1);
    const meta = v1.find((a) => 'metaData' in a);
    expect(
      meta && 'metaData' in meta
        ? JSON.parse(meta.metaData.schemaString).fields.map((f: { name: string }) => f.name)
        : null,
    ).toEqual(['order_id', 'status', 'seq', '_source_file', '_source_modified', 'coupon']);
    expect(v1.some((a) => 'add' in a) && v1.some((a) => 'txn' in a)).toBe(true);
    expect((await commitOf(z.setup, 2)).some((a) => 'metaData' in a)).toBe(true);
    expect(await tableRows(session, z.setup, 'order_id')).toEqual([
      { order_id: '1', status: 'placed', seq: '1', coupon: null, channel: null },
      { order_id: '2', status: 'paid', seq: '2', coupon: 'SPRING', channel: null },
      { order_id: '3', status: 'placed', seq: '1', coupon: null, channel: 'web' },
    ]);
  });

  it('append mode adds new columns too', async () => {
    const z = await zone({}, { uri: await tempDir('drift-t', dirs), mode: 'append' });
    await z.source.write('2025/03/01/a.ndjson', '{"id":1,"kind":"click"}\n');
    await run(z.setup);
    await z.source.write('2025/03/02/b.ndjson', '{"id":2,"kind":"view","ms":12.5}\n');
    await run(z.setup);
    expect(await tableRows(session, z.setup, 'id')).toEqual([
      { id: '1', kind: 'click', ms: null },
      { id: '2', kind: 'view', ms: 12.5 },
    ]);
  });
});

describe("schemaEvolution: 'fail'", () => {
  it('refuses the batch naming the new columns and their files; nothing is committed, the watermark stays', async () => {
    const z = await zone({ schemaEvolution: 'fail' });
    await z.source.write('2025/03/01/a.csv', 'order_id,status,seq\n1,placed,1\n');
    await run(z.setup);
    await z.source.write('2025/03/02/b.csv', 'order_id,status,seq\n2,placed,1\n');
    await z.source.write('2025/03/02/c.csv', 'order_id,status,seq,coupon\n3,paid,2,SPRING\n');
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('"coupon"');
    expect(err.message).toContain(`${z.uri}2025/03/02/c.csv`);
    expect(err.message).not.toContain('b.csv');
    const table = await readTarget(session, z.setup);
    expect(table.snapshot!.version).toBe(0);
    expect(table.state.discovery).toMatchObject({ watermark: '2025-03-01' });
  });
});

describe("CSV files load in the table's types", () => {
  /** A table created from Parquet with exact types. */
  async function typedTable() {
    const z = await zone();
    await putParquet(
      z.source,
      session,
      '2025/03/01/seed.parquet',
      `SELECT 1::BIGINT AS order_id, 'a' AS status, 1::BIGINT AS seq, 1.25::DECIMAL(12,2) AS amount, '001' AS code, DATE '2025-03-01' AS day`,
    );
    await run(z.setup);
    return z;
  }

  it('integers in one file, decimals in another, an empty column in a third; a code with leading zeros stays text', async () => {
    const z = await typedTable();
    await z.source.write(
      '2025/03/02/ints.csv',
      'order_id,status,seq,amount,code,day\n2,placed,1,3,007,2025-03-02\n',
    );
    await z.source.write(
      '2025/03/02/decimals.csv',
      'order_id,status,seq,amount,code,day\n3,placed,1,2.50,010,2025-03-02\n',
    );
    await z.source.write(
      '2025/03/02/empty-amount.csv',
      'order_id,status,seq,amount,code,day\n4,placed,1,,,\n',
    );
    const report = await run(z.setup);
    expect(report).toMatchObject({ status: 'succeeded', filesLoaded: 3, inserted: 3 });
    const table = await readTarget(session, z.setup);
    expect(table.snapshot!.schema.fields.map((f) => f.type).slice(0, 6)).toEqual([
      'long',
      'string',
      'long',
      'decimal(12,2)',
      'string',
      'date',
    ]);
    expect(await tableRows(session, z.setup, 'order_id')).toEqual([
      { order_id: '1', status: 'a', seq: '1', amount: '1.25', code: '001', day: '2025-03-01' },
      { order_id: '2', status: 'placed', seq: '1', amount: '3.00', code: '007', day: '2025-03-02' },
      { order_id: '3', status: 'placed', seq: '1', amount: '2.50', code: '010', day: '2025-03-02' },
      { order_id: '4', status: 'placed', seq: '1', amount: null, code: null, day: null },
    ]);
  });

  it("orders versions by the table's type before dedupe (seq 10 beats seq 9 although a file with seq all empty reads as text)", async () => {
    const z = await typedTable();
    await z.source.write('2025/03/02/a.csv', 'order_id,status,seq\n5,old,9\n');
    await z.source.write('2025/03/02/b.csv', 'order_id,status,seq\n5,new,10\n');
    await z.source.write('2025/03/02/c.csv', 'order_id,status,seq\n6,no-seq,\n');
    await run(z.setup);
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.find((r) => r['order_id'] === '5')).toMatchObject({ status: 'new', seq: '10' });
    expect(rows.find((r) => r['order_id'] === '6')).toMatchObject({ status: 'no-seq', seq: null });
  });

  it("a value that does not fit fails the batch naming file, column and row (string 'abc' into BIGINT)", async () => {
    const z = await typedTable();
    await z.source.write('2025/03/02/ok.csv', 'order_id,status,seq\n6,placed,1\n');
    await z.source.write('2025/03/02/bad.csv', 'order_id,status,seq\n7,placed,1\n8,placed,abc\n');
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('"abc"');
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/bad.csv`,
      column: 'seq',
      row: 2,
    });
    const table = await readTarget(session, z.setup);
    expect(table.snapshot!.version).toBe(0);
    expect(table.state.discovery).toMatchObject({ watermark: '2025-03-01' });
  });

  it("dates in a format DuckDB's sniffer detects (and naive timestamps) keep loading into the table's date and timestamp columns", async () => {
    const z = await zone();
    await z.source.write(
      '2025/03/01/a.csv',
      'order_id,status,seq,day,at\n1,placed,1,03/15/2025,2025-03-15 10:30:00\n',
    );
    await run(z.setup);
    const t = await readTarget(session, z.setup);
    expect(t.snapshot!.schema.fields.slice(3, 5).map((f) => f.type)).toEqual(['date', 'timestamp']);
    await z.source.write(
      '2025/03/02/b.csv',
      'order_id,status,seq,day,at\n2,placed,1,03/16/2025,2025-03-16T08:00:00\n',
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['day'], r['at']])).toEqual([
      ['2025-03-15', '2025-03-15 10:30:00+00'],
      ['2025-03-16', '2025-03-16 08:00:00+00'],
    ]);
  });

  it('a value the sniffer mistyped far down a big file is still named by row', async () => {
    const z = await typedTable();
    const lines = Array.from({ length: 30_000 }, (_, i) => `${100 + i},placed,${i}`);
    lines[25_000] = '25100,placed,oops';
    await z.source.write('2025/03/02/big.csv', `order_id,status,seq\n${lines.join('\n')}\n`);
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/big.csv`,
      column: 'seq',
      row: 25_001,
    });
  });
});

describe('widening and narrowing', () => {
  async function table(select: string) {
    const z = await zone();
    await putParquet(z.source, session, '2025/03/01/seed.parquet', select);
    await run(z.setup);
    return z;
  }

  it('narrower incoming types widen: int into long, float into double, decimal(10,2) into decimal(12,2)', async () => {
    const z = await table(
      `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, 1.5::DOUBLE AS score, 1.25::DECIMAL(12,2) AS amount`,
    );
    await putParquet(
      z.source,
      session,
      '2025/03/02/narrow.parquet',
      `SELECT 2::INTEGER AS order_id, 2::INTEGER AS seq, 0.5::FLOAT AS score, 9.99::DECIMAL(10,2) AS amount`,
    );
    await run(z.setup);
    const t = await readTarget(session, z.setup);
    expect(t.snapshot!.schema.fields.slice(0, 4).map((f) => f.type)).toEqual([
      'long',
      'long',
      'double',
      'decimal(12,2)',
    ]);
    expect((await tableRows(session, z.setup, 'order_id'))[1]).toEqual({
      order_id: '2',
      seq: '2',
      score: 0.5,
      amount: '9.99',
    });
  });

  it('a wider type casts when every value fits, and is refused naming file, column and row when one does not', async () => {
    const z = await table(`SELECT 1::BIGINT AS order_id, 1::INTEGER AS seq`);
    await putParquet(
      z.source,
      session,
      '2025/03/02/fits.parquet',
      `SELECT 2::BIGINT AS order_id, 5::BIGINT AS seq`,
    );
    await run(z.setup);
    await putParquet(
      z.source,
      session,
      '2025/03/03/big.parquet',
      `SELECT * FROM (VALUES (3::BIGINT, 6::BIGINT), (4, 3000000000)) t(order_id, seq)`,
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('typeWidening');
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/03/big.parquet`,
      column: 'seq',
      row: 2,
    });
    const t = await readTarget(session, z.setup);
    expect(t.snapshot!.version).toBe(1);
    expect(t.snapshot!.schema.fields[1]).toMatchObject({ name: 'seq', type: 'integer' });
  });
});

describe('schema drift with source and table on S3 (s3rver)', () => {
  let s3: S3rverHandle;
  beforeAll(async () => {
    process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
    s3 = await startS3rver();
  });
  afterAll(async () => {
    await s3?.stop();
  });

  function s3Zone(extra: Record<string, unknown> = {}) {
    const prefix = `drift-${randomUUID()}/`;
    const setup = makeConfig(
      {
        source: { uri: `s3://${s3.bucket}/${prefix}`, discover: byDay },
        target: mergeTarget(`s3://${s3.bucket}/lake-${randomUUID()}/orders`),
        ...extra,
      },
      { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, singleWriter: true },
    );
    return { source: s3.makeStorage(prefix), setup };
  }

  it('adds a new column, and a value that does not fit fails naming file, column and row with nothing committed', async () => {
    const z = s3Zone();
    await z.source.write('2025/03/01/a.csv', 'order_id,status,seq\n1,placed,1\n');
    await run(z.setup);
    await z.source.write('2025/03/02/b.csv', 'order_id,status,seq,coupon\n2,paid,2,SPRING\n');
    expect(await run(z.setup)).toMatchObject({
      status: 'succeeded',
      tableVersion: 1,
      watermark: '2025-03-02',
    });
    expect(await tableRows(session, z.setup, 'order_id')).toEqual([
      { order_id: '1', status: 'placed', seq: '1', coupon: null },
      { order_id: '2', status: 'paid', seq: '2', coupon: 'SPRING' },
    ]);

    await z.source.write(
      '2025/03/03/c.csv',
      'order_id,status,seq\n3,placed,1\n4,placed,not-a-number\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain(`s3://${s3.bucket}/`);
    expect(err.message).toContain('2025/03/03/c.csv');
    expect(err.message).toMatch(/seq/);
    expect(err.message).toMatch(/row 2\b/);
    const view = await readTarget(session, z.setup);
    expect(view.snapshot?.version).toBe(1);
    expect(view.state.discovery).toMatchObject({ watermark: '2025-03-02' });
  });

  it("schemaEvolution 'fail' names the new column and its file on S3", async () => {
    const z = s3Zone({ schemaEvolution: 'fail' });
    await z.source.write('2025/03/01/a.csv', 'order_id,status,seq\n1,placed,1\n');
    await run(z.setup);
    await z.source.write('2025/03/02/b.csv', 'order_id,status,seq,coupon\n2,paid,2,SPRING\n');
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('"coupon"');
    expect(err.message).toContain('2025/03/02/b.csv');
    expect((await readTarget(session, z.setup)).snapshot?.version).toBe(0);
  });
});
