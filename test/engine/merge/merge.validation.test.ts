/**
 * Bad MERGE input fails before anything is written: duplicate and NULL keys, an invalid delete
 * condition, batch columns the table lacks, values that do not cast. Errors name the column,
 * key value, expression or source file concerned, and the table keeps its version.
 */
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { BadFileError, MergeInputError, SchemaError } from '../../../src/errors.js';
import { localFixture, makeBatch, merge, snapshotOf, type Fixture } from './helpers.js';
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
    `SELECT * FROM (VALUES (1, 'a', 10), (2, 'b', 10)) t(id, name, v)`,
  );
  await merge(f, { batch: 'seed', keyColumns: ['id'], orderBy: 'v' });
});
afterEach(async () => {
  await f.close();
});

const KEY = { keyColumns: ['id'], orderBy: 'v' };

async function expectUnchangedTable(): Promise<void> {
  const snapshot = await snapshotOf(f);
  expect(snapshot.version).toBe(0);
}

describe('key checks', () => {
  it('rejects a batch with two rows for one key, naming the key value and file', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (7, 'x', 1, 's3://landing/a.json'), (7, 'y', 2, 's3://landing/b.json'), (8, 'z', 1, 's3://landing/a.json')) t(id, name, v, _source_file)`,
    );
    const err = await failure(merge(f, { batch: 'b', ...KEY, internalColumns: ['_source_file'] }));
    expect(err).toBeInstanceOf(MergeInputError);
    expect(err.message).toMatch(/2 rows for key \(id=7\)/);
    expect(err.message).toMatch(/s3:\/\/landing\/[ab]\.json/);
    expect((err as MergeInputError).context).toMatchObject({ keyValue: 'id=7' });
    await expectUnchangedTable();
  });

  it('rejects duplicate composite keys, naming every key column', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (5, 'k', 1), (5, 'k', 2), (5, 'j', 1)) t(id, name, v)`,
    );
    const err = await failure(merge(f, { batch: 'b', keyColumns: ['id', 'name'], orderBy: 'v' }));
    expect(err).toBeInstanceOf(MergeInputError);
    expect(err.message).toContain('2 rows for key (id=5, name="k")');
  });

  it('rejects a NULL key, naming the key column, the source file and the row', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (3, 'x', 1, 'land/f1.csv', 1), (NULL, 'y', 1, 'land/f2.csv', 17)) t(id, name, v, _source_file, _source_row)`,
    );
    const err = await failure(
      merge(f, {
        batch: 'b',
        ...KEY,
        internalColumns: ['_source_file', '_source_row'],
        sourceRowColumn: '_source_row',
      }),
    );
    expect(err).toBeInstanceOf(MergeInputError);
    expect(err.message).toContain('key column "id" is NULL');
    expect(err.message).toContain('land/f2.csv');
    expect((err as MergeInputError).context).toMatchObject({
      column: 'id',
      key: 'land/f2.csv',
      row: 17,
    });
    await expectUnchangedTable();
  });

  it('rejects a NULL in the second column of a composite key, naming that column', async () => {
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (3, NULL, 1)) t(id, name, v)`);
    const err = await failure(merge(f, { batch: 'b', keyColumns: ['id', 'name'], orderBy: 'v' }));
    expect(err).toBeInstanceOf(MergeInputError);
    expect((err as MergeInputError).context.column).toBe('name');
  });
});

describe('deleteWhen', () => {
  it.each([
    ['a syntax error', 'op = '],
    ['a second statement', `true; DROP TABLE seed; SELECT true`],
    ['an attempt to close the expression', `true) AS flag FROM seed --`],
    ['an unknown column', 'no_such_column'],
    ['a value that is not boolean', `'maybe'`],
  ])('rejects %s, naming the expression', async (_what, expr) => {
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (3, 'x', 1, 'U')) t(id, name, v, op)`);
    const err = await failure(
      merge(f, { batch: 'b', ...KEY, deleteWhen: expr, internalColumns: ['op'] }),
    );
    expect(err).toBeInstanceOf(MergeInputError);
    expect(err.message).toContain(`invalid deleteWhen expression ${JSON.stringify(expr)}`);
    expect((await session.all(`SELECT count(*) AS n FROM seed`))[0]!['n']).toBe(2n);
    await expectUnchangedTable();
  });
});

describe('schema checks', () => {
  it('rejects batch columns the table does not have, naming them', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (3, 'x', 1, 'red', 5)) t(id, name, v, colour, size)`,
    );
    const err = await failure(merge(f, { batch: 'b', ...KEY }));
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('"colour", "size"');
    await expectUnchangedTable();
  });

  it('rejects a key column missing from the batch', async () => {
    await makeBatch(session, 'b', `SELECT * FROM (VALUES ('x', 1)) t(name, v)`);
    const err = await failure(merge(f, { batch: 'b', ...KEY }));
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('key column "id" is missing from the batch');
  });

  it('names the file, row and column of a value that does not cast to the table type', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES ('3', 'x', '1', 'in/ok.csv', 1), ('4', 'y', 'soon', 'in/bad.csv', 2)) t(id, name, v, _source_file, _source_row)`,
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
    expect(err.message).toContain('"soon"');
    expect((err as BadFileError).context).toMatchObject({ column: 'v', key: 'in/bad.csv', row: 2 });
    await expectUnchangedTable();
  });

  it('refuses batch columns with reserved internal names', async () => {
    await makeBatch(session, 'b', `SELECT 3 AS id, 'x' AS name, 1 AS v, true AS __tm_delete`);
    const err = await failure(merge(f, { batch: 'b', ...KEY }));
    expect(err).toBeInstanceOf(MergeInputError);
    expect(err.message).toContain('__tm_delete');
  });
});
