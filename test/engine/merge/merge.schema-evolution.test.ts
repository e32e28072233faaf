/**
 * Schema drift in the write engine: new batch columns are added to the table by a metaData
 * action in the same commit as the data (`schemaEvolution: 'addColumns'`) or refused naming the
 * columns and their files (`'fail'`, the engine's default); older files read them as NULL.
 * Narrower incoming types widen into the table's columns; wider ones cast only when every value
 * fits, and the table's column types never change.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseCommit } from '../../../src/delta/actions.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { BadFileError, SchemaError } from '../../../src/errors.js';
import { localFixture, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';
import { appendAndCommit } from '../../../scripts/lib/tables.js';
import { failure } from '../../helpers/cli.js';

let session: DuckSession;
let f: Fixture;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());
beforeEach(async () => {
  f = await localFixture(session);
  await makeBatch(
    session,
    'seed',
    `SELECT * FROM (VALUES (1::INTEGER, 'a', 10::BIGINT), (2, 'b', 10)) t(id, name, v)`,
  );
  await merge(f, { batch: 'seed', keyColumns: ['id'], orderBy: 'v' });
});
afterEach(async () => {
  await f.close();
});

const KEY = { keyColumns: ['id'], orderBy: 'v' };

/** The actions of commit `version`. */
async function commitActions(version: number) {
  const bytes = await f.storage.read(`_delta_log/${String(version).padStart(20, '0')}.json`);
  return parseCommit(new TextDecoder().decode(bytes!), version, f.storage.uri);
}

describe("schemaEvolution: 'addColumns'", () => {
  it('MERGE adds new columns in the commit of the data; old rows read them as NULL', async () => {
    const before = await snapshotOf(f);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, 'b2', 11, 'red', 1.5::DECIMAL(12,2)), (3, 'c', 11, NULL, NULL)) t(id, name, v, colour, price)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY, schemaEvolution: 'addColumns' });
    expect(r.version).toBe(1);
    const after = await snapshotOf(f);
    expect(after.schema.fields.map((x) => [x.name, x.type])).toEqual([
      ['id', 'integer'],
      ['name', 'string'],
      ['v', 'long'],
      ['colour', 'string'],
      ['price', 'decimal(12,2)'],
    ]);
    expect(after.metadata.id).toBe(before.metadata.id);
    expect(after.partitionColumns).toEqual(before.partitionColumns);
    expect(after.metadata.configuration).toEqual(before.metadata.configuration);
    const actions = await commitActions(1);
    expect(actions.filter((a) => 'metaData' in a)).toHaveLength(1);
    expect(actions.some((a) => 'add' in a)).toBe(true);
    expect(await readRows(f, 'id')).toEqual([
      { id: 1, name: 'a', v: '10', colour: null, price: null },
      { id: 2, name: 'b2', v: '11', colour: 'red', price: '1.50' },
      { id: 3, name: 'c', v: '11', colour: null, price: null },
    ]);
  });

  it('append adds new columns too', async () => {
    await makeBatch(session, 'b', `SELECT 5 AS id, 'e' AS name, 1 AS v, true AS flag`);
    const r = await appendAndCommit(f.table, session, {
      batch: 'b',
      schemaEvolution: 'addColumns',
    });
    expect(r.version).toBe(1);
    expect((await snapshotOf(f)).schema.fields.map((x) => x.name)).toEqual([
      'id',
      'name',
      'v',
      'flag',
    ]);
    const rows = await readRows(f, 'id');
    expect(rows.map((x) => x['flag'])).toEqual([null, null, true]);
  });

  it('keeps the metadata of existing fields', async () => {
    // A table whose field carries metadata (a comment, as Spark writes it).
    const snapshot = await snapshotOf(f);
    const schema = {
      ...snapshot.schema,
      fields: snapshot.schema.fields.map((x) =>
        x.name === 'name' ? { ...x, metadata: { comment: 'the name' } } : x,
      ),
    };
    await f.table.commit({
      actions: [{ metaData: { ...snapshot.metadata, schemaString: JSON.stringify(schema) } }],
      operation: 'SET TBLPROPERTIES',
      read: { readVersion: snapshot.version, partitions: 'all', files: [], appIds: [] },
      isBlindAppend: false,
    });
    await makeBatch(session, 'b', `SELECT 6 AS id, 'f' AS name, 1 AS v, 'x' AS extra`);
    await merge(f, { batch: 'b', ...KEY, schemaEvolution: 'addColumns' });
    const after = await snapshotOf(f);
    expect(after.schema.fields.find((x) => x.name === 'name')!.metadata).toEqual({
      comment: 'the name',
    });
    expect(after.schema.fields.at(-1)).toEqual({
      name: 'extra',
      type: 'string',
      nullable: true,
      metadata: {},
    });
  });
});

describe("schemaEvolution: 'fail'", () => {
  it('refuses new columns, naming them and the files holding them; nothing is committed', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (3, 'c', 1, 'red', 's3://landing/new.csv'), (4, 'd', 1, NULL, 's3://landing/old.csv')) t(id, name, v, colour, _source_file)`,
    );
    const err = await failure(
      merge(f, { batch: 'b', ...KEY, internalColumns: ['_source_file'], schemaEvolution: 'fail' }),
    );
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('"colour"');
    expect(err.message).toContain('s3://landing/new.csv');
    expect(err.message).not.toContain('old.csv');
    expect((err as SchemaError).context).toMatchObject({
      column: 'colour',
      key: 's3://landing/new.csv',
    });
    expect((await snapshotOf(f)).version).toBe(0);
  });
});

describe('column types', () => {
  it('widens narrower incoming types (smallint into integer, integer into long)', async () => {
    await makeBatch(session, 'b', `SELECT 3::SMALLINT AS id, 'c' AS name, 7::INTEGER AS v`);
    await merge(f, { batch: 'b', ...KEY });
    const after = await snapshotOf(f);
    expect(after.schema.fields.map((x) => x.type)).toEqual(['integer', 'string', 'long']);
    expect((await readRows(f, 'id')).at(-1)).toEqual({ id: 3, name: 'c', v: '7' });
  });

  it('casts a wider type when every value fits', async () => {
    await makeBatch(session, 'b', `SELECT 4::BIGINT AS id, 'd' AS name, '8' AS v`);
    await merge(f, { batch: 'b', ...KEY });
    expect((await readRows(f, 'id')).at(-1)).toEqual({ id: 4, name: 'd', v: '8' });
  });

  it('refuses a value that does not fit, naming file, row and column, and keeps the column type', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (5::BIGINT, 'e', 1, 'in/a.parquet', 1), (3000000000::BIGINT, 'f', 1, 'in/b.parquet', 7)) t(id, name, v, _source_file, _source_row)`,
    );
    const err = await failure(
      merge(f, {
        batch: 'b',
        ...KEY,
        internalColumns: ['_source_file', '_source_row'],
        sourceRowColumn: '_source_row',
      }),
    );
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('"3000000000"');
    expect(err.message).toContain('typeWidening');
    expect((err as BadFileError).context).toMatchObject({
      column: 'id',
      key: 'in/b.parquet',
      row: 7,
    });
    expect((await snapshotOf(f)).schema.fields[0]!.type).toBe('integer');
  });

  it('refuses a fraction into an integer column instead of rounding it', async () => {
    await makeBatch(session, 'b', `SELECT 6 AS id, 'g' AS name, 2.5::DOUBLE AS v`);
    const err = await failure(merge(f, { batch: 'b', ...KEY }));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toMatch(
      /value "2\.5" of column "v" cannot be cast to the table's type BIGINT/,
    );
  });
});
