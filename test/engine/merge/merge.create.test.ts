/**
 * The table-creating MERGE reads the batch through a view (no copy): every check of a prepared
 * batch still runs before anything is written, and the view is gone afterwards.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { BadFileError, MergeInputError } from '../../../src/errors.js';
import { localFixture, makeBatch, merge, readRows, type Fixture } from './helpers.js';

let session: DuckSession;
let f: Fixture;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());
beforeEach(async () => {
  f = await localFixture(session);
});
afterEach(async () => {
  await f.close();
});

const LINEAGE = {
  internalColumns: ['_source_file', '_source_row'],
  sourceRowColumn: '_source_row',
};
const HUGE = '170141183460469231731687303715884105727::HUGEINT';

async function tableExists(): Promise<boolean> {
  return (await f.storage.read('_delta_log/00000000000000000000.json')) !== null;
}

async function leftovers(): Promise<unknown[]> {
  return session.all(
    `SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '__tm_batch%' UNION ALL SELECT view_name FROM duckdb_views() WHERE view_name LIKE '__tm_batch%'`,
  );
}

describe('table-creating MERGE', () => {
  it('writes the non-deleted rows, cast to the new schema, and leaves no batch view behind', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1::UINTEGER, 'a', 5::HUGEINT, 'I'), (2, 'b', 6, 'D'), (3, 'c', 7, 'I')) t(id, name, v, op)`,
    );
    const r = await merge(f, {
      batch: 'b',
      keyColumns: ['id'],
      orderBy: 'v',
      deleteWhen: `op = 'D'`,
    });
    expect(r).toMatchObject({ version: 0, inserted: 2 });
    expect((await readRows(f, 'id')).map((x) => [x['id'], x['name']])).toEqual([
      ['1', 'a'],
      ['3', 'c'],
    ]);
    expect(await leftovers()).toEqual([]);
  });

  it('refuses a value that does not fit the new column, naming file, row and column; creates nothing', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 1::HUGEINT, 'in/a.parquet', 1), (2, ${HUGE}, 'in/b.parquet', 9)) t(id, v, _source_file, _source_row)`,
    );
    const err = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'id', ...LINEAGE }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      column: 'v',
      key: 'in/b.parquet',
      row: 9,
    });
    expect(await tableExists()).toBe(false);
    expect(await leftovers()).toEqual([]);
  });

  it('names a NULL key with its file and row', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 1, 'in/a.parquet', 1), (NULL, 2, 'in/b.parquet', 4)) t(id, v, _source_file, _source_row)`,
    );
    const err = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'v', ...LINEAGE }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MergeInputError);
    expect((err as MergeInputError).message).toMatch(
      /key column "id" is NULL in a batch row \(file in\/b\.parquet, row 4\)/,
    );
    expect(await tableExists()).toBe(false);
  });

  it('names deleteWhen when it fails on a row', async () => {
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (1, 1, 'x'), (2, 2, 'y')) t(id, v, op)`);
    const err = await merge(f, {
      batch: 'b',
      keyColumns: ['id'],
      orderBy: 'v',
      deleteWhen: `CAST(op AS INTEGER) = 1`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MergeInputError);
    expect((err as MergeInputError).message).toMatch(/invalid deleteWhen expression/);
    expect(await tableExists()).toBe(false);
  });
});
