/**
 * CHECK constraints, column invariants and NOT NULL columns (PROTOCOL.md "Column Invariants",
 * "CHECK Constraints") on a table written by hand as Spark writes one: every row a MERGE or an
 * append stores must keep every rule (false and NULL both break it). A row that breaks one fails
 * the write naming the rule, the source file, the row and the key, before any file is written, so
 * nothing is committed. Stale rows and delete rows are not stored and are not checked. A rule
 * DuckDB cannot evaluate refuses the write, naming it. The same table records a change data feed.
 */
import { readdir } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import {
  BadFileError,
  ConstraintViolationError,
  UnsupportedFeatureError,
} from '../../../src/errors.js';
import { appendAndCommit } from '../../../scripts/lib/tables.js';
import { changeRows } from '../../helpers/change-data.js';
import { field, writeSparkLikeTable } from '../../helpers/spark-like-table.js';
import { localFixture, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

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

const OWNER = {
  type: 'struct' as const,
  fields: [field('name', 'string', { nullable: false }), field('email', 'string')],
};

/** accounts: ids 0..4, owner {name, email}, status 'new', amount id*10, v 1. */
async function accountsTable(configuration: Record<string, string> = {}): Promise<void> {
  await writeSparkLikeTable(session, f.dir, {
    fields: [
      field('id', 'long', { nullable: false }),
      field('owner', OWNER),
      field('status', 'string'),
      field('amount', 'long'),
      field('v', 'long', {
        metadata: {
          'delta.invariants': JSON.stringify({ expression: { expression: 'v < 1000000' } }),
        },
      }),
    ],
    configuration: {
      'delta.enableChangeDataFeed': 'true',
      'delta.constraints.nonneg': 'amount >= 0',
      'delta.constraints.known_status': '`status` IN ("new", "done")',
      ...configuration,
    },
    rowsSql:
      `SELECT range::BIGINT AS id, {'name': 'owner-' || range, 'email': NULL::VARCHAR} AS owner, 'new' AS status, ` +
      `(range * 10)::BIGINT AS amount, 1::BIGINT AS v FROM range(5)`,
  });
}

/** A batch row: SQL values for id, owner, status, amount, v, gone; from file s3://landing/<file> row <row>. */
interface BatchRow {
  id: number;
  owner?: string;
  status?: string;
  amount?: string;
  v?: number;
  gone?: boolean;
  file?: string;
  row?: number;
}

async function batchOf(rows: BatchRow[]): Promise<string> {
  const select = rows.map(
    (r) =>
      `SELECT ${r.id}::BIGINT AS id, ${r.owner ?? `{'name': 'x', 'email': NULL::VARCHAR}`} AS owner, ${r.status ?? "'new'"} AS status, ` +
      `(${r.amount ?? '1'})::BIGINT AS amount, ${r.v ?? 2}::BIGINT AS v, ${r.gone ?? false} AS gone, ` +
      `'s3://landing/${r.file ?? 'a.csv'}' AS _source_file, ${r.row ?? 1}::BIGINT AS _source_row`,
  );
  return makeBatch(session, 'b', select.join(' UNION ALL '));
}

const MERGE = {
  keyColumns: ['id'],
  orderBy: 'v',
  deleteWhen: 'gone',
  internalColumns: ['gone', '_source_file', '_source_row'],
  sourceRowColumn: '_source_row',
  deletionVectors: 'off' as const,
};

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).sort();
}

/** The MERGE of `rows` fails with a ConstraintViolationError; nothing is committed or written. */
async function refused(rows: BatchRow[]): Promise<ConstraintViolationError> {
  const before = await filesUnder(f.dir);
  const version = (await snapshotOf(f)).version;
  const err = await merge(f, { batch: await batchOf(rows), ...MERGE }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConstraintViolationError);
  expect((await snapshotOf(f)).version).toBe(version);
  expect(await filesUnder(f.dir)).toEqual(before);
  return err as ConstraintViolationError;
}

describe('a row that breaks a rule fails the MERGE before anything is written', () => {
  it('a CHECK constraint: names it, its expression, the file, the row and the key', async () => {
    await accountsTable();
    const err = await refused([
      { id: 7, file: 'b.csv', row: 1 },
      { id: 8, amount: '-5', file: 'b.csv', row: 2 },
    ]);
    expect(err).toBeInstanceOf(BadFileError); // bad data: onBadFile quarantine sets the file aside
    expect(err.constraint).toBe('CHECK constraint nonneg');
    expect(err.context).toMatchObject({
      key: 's3://landing/b.csv',
      row: 2,
      keyValue: 'id=8',
      expression: 'amount >= 0',
    });
    expect(err.message).toBe(
      `[merge] the row with key (id=8) (file s3://landing/b.csv, row 2) violates CHECK constraint nonneg (amount >= 0) of table ${f.storage.uri}`,
    );
  });

  it('NULL breaks a CHECK constraint (Spark: the expression must be true)', async () => {
    await accountsTable();
    expect((await refused([{ id: 8, amount: 'NULL' }])).constraint).toBe('CHECK constraint nonneg');
  });

  it('Spark\'s quoting: `status` IN ("new", "done")', async () => {
    await accountsTable();
    expect((await refused([{ id: 8, status: "'weird'" }])).constraint).toBe(
      'CHECK constraint known_status',
    );
    await merge(f, { batch: await batchOf([{ id: 8, status: "'done'" }]), ...MERGE });
    expect((await readRows(f, 'id')).find((r) => Number(r['id']) === 8)?.['status']).toBe('done');
  });

  it('a column invariant names the column', async () => {
    await accountsTable();
    const err = await refused([{ id: 8, v: 5_000_000 }]);
    expect(err.constraint).toBe('invariant on column v');
    expect(err.context).toMatchObject({ column: 'v', expression: 'v < 1000000' });
  });

  it('NOT NULL on a nested field: a NULL value, and a NULL parent struct', async () => {
    await accountsTable();
    expect(
      (await refused([{ id: 8, owner: `{'name': NULL::VARCHAR, 'email': 'e'}` }])).constraint,
    ).toBe('NOT NULL column owner.name');
    const err = await refused([{ id: 9, owner: `NULL::STRUCT(name VARCHAR, email VARCHAR)` }]);
    expect(err.constraint).toBe('NOT NULL column owner.name');
    expect(err.context).toMatchObject({ column: 'owner.name', keyValue: 'id=9' });
  });

  it('an update is checked like an insert; the first bad row by file and row is named', async () => {
    await accountsTable();
    const err = await refused([
      { id: 2, amount: '-1', file: 'c.csv', row: 4 },
      { id: 3, amount: '-1', file: 'c.csv', row: 3 },
    ]);
    expect(err.context).toMatchObject({ key: 's3://landing/c.csv', row: 3, keyValue: 'id=3' });
  });
});

describe('NOT NULL elements and values (containsNull / valueContainsNull false)', () => {
  it('a NULL array element or map value breaks it; a NULL array or map does not', async () => {
    await writeSparkLikeTable(session, f.dir, {
      fields: [
        field('id', 'long'),
        field('tags', { type: 'array', elementType: 'string', containsNull: false }),
        field('attrs', {
          type: 'map',
          keyType: 'string',
          valueType: 'string',
          valueContainsNull: false,
        }),
      ],
      configuration: {},
      rowsSql: `SELECT 1::BIGINT AS id, ['a'] AS tags, MAP {'k': 'v'} AS attrs`,
    });
    const opts = { keyColumns: ['id'], orderBy: 'id', deletionVectors: 'off' as const };
    const attempt = (tags: string, attrs: string) =>
      makeBatch(session, 'b', `SELECT 2::BIGINT AS id, ${tags} AS tags, ${attrs} AS attrs`).then(
        (b) => merge(f, { batch: b, ...opts }),
      );
    await expect(attempt(`['a', NULL]`, `MAP {'k': 'v'}`)).rejects.toThrow(
      /violates NOT NULL elements of column tags/,
    );
    await expect(attempt(`['a']`, `MAP {'k': NULL::VARCHAR}`)).rejects.toThrow(
      /violates NOT NULL values of column attrs/,
    );
    expect(await attempt(`NULL::VARCHAR[]`, `NULL::MAP(VARCHAR, VARCHAR)`)).toMatchObject({
      inserted: 1,
    });
  });
});

describe('rows the MERGE does not store are not checked', () => {
  it('a stale row and a delete row may break rules; the good rows are written', async () => {
    await accountsTable();
    const r = await merge(f, {
      batch: await batchOf([
        { id: 2, amount: '-1', v: 0 }, // stale: older than the stored row
        { id: 3, amount: 'NULL', owner: 'NULL::STRUCT(name VARCHAR, email VARCHAR)', gone: true }, // a delete (CDC delete rows carry little)
        { id: 4, amount: '44' },
      ]),
      ...MERGE,
    });
    expect(r).toMatchObject({ skippedStale: 1, deleted: 1, updated: 1 });
  });
});

describe('rules DuckDB cannot evaluate', () => {
  it('refuse the write, naming the constraint and the feature', async () => {
    await accountsTable({ 'delta.constraints.odd': 'no_such_function(status) > 0' });
    const err = await merge(f, { batch: await batchOf([{ id: 8 }]), ...MERGE }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnsupportedFeatureError);
    expect((err as UnsupportedFeatureError).feature).toBe('checkConstraints');
    expect((err as Error).message).toContain(
      'CHECK constraint odd (no_such_function(status) > 0) cannot be evaluated',
    );
    expect((await snapshotOf(f)).version).toBe(0);
  });

  it('a subquery is refused', async () => {
    await accountsTable({ 'delta.constraints.sub': 'amount IN (SELECT 1)' });
    await expect(merge(f, { batch: await batchOf([{ id: 8 }]), ...MERGE })).rejects.toThrow(
      /CHECK constraint sub .* cannot be evaluated: subqueries/,
    );
  });
});

describe('append', () => {
  it('checks every row, naming the file and row (no key)', async () => {
    await accountsTable();
    const batch = await batchOf([
      { id: 20, file: 'e.csv', row: 1 },
      { id: 21, amount: '-3', file: 'e.csv', row: 2 },
    ]);
    const err = await appendAndCommit(f.table, session, {
      batch,
      internalColumns: ['gone', '_source_file', '_source_row'],
      sourceRowColumn: '_source_row',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConstraintViolationError);
    expect((err as ConstraintViolationError).context).toMatchObject({
      key: 's3://landing/e.csv',
      row: 2,
      constraint: 'CHECK constraint nonneg',
    });
    expect((err as Error).message).toMatch(
      /^\[merge\] a row \(file s3:\/\/landing\/e\.csv, row 2\) violates/,
    );
    expect((await snapshotOf(f)).version).toBe(0);
  });
});

describe('the hand-written Spark table records a change data feed', () => {
  it('a MERGE with an update, a delete and an insert writes exactly those changes', async () => {
    await accountsTable();
    const r = await merge(f, {
      batch: await batchOf([
        { id: 1, amount: '11', status: "'done'" },
        { id: 2, gone: true },
        { id: 9, amount: '90' },
      ]),
      ...MERGE,
    });
    expect(r).toMatchObject({ updated: 1, deleted: 1, inserted: 1, changeFilesAdded: 1 });
    const rows = await changeRows(
      session,
      f.storage,
      r.version!,
      `id, _change_type = 'update_postimage'`,
    );
    expect(
      rows.map((x) => ({
        ...x,
        id: Number(x['id']),
        amount: Number(x['amount']),
        v: Number(x['v']),
      })),
    ).toEqual([
      {
        id: 1,
        owner: { name: 'owner-1', email: null },
        status: 'new',
        amount: 10,
        v: 1,
        _change_type: 'update_preimage',
      },
      {
        id: 1,
        owner: { name: 'x', email: null },
        status: 'done',
        amount: 11,
        v: 2,
        _change_type: 'update_postimage',
      },
      {
        id: 2,
        owner: { name: 'owner-2', email: null },
        status: 'new',
        amount: 20,
        v: 1,
        _change_type: 'delete',
      },
      {
        id: 9,
        owner: { name: 'x', email: null },
        status: 'new',
        amount: 90,
        v: 2,
        _change_type: 'insert',
      },
    ]);
    // The legacy protocol is kept: writer 4 supports both features.
    expect((await snapshotOf(f)).protocol).toEqual({ minReaderVersion: 1, minWriterVersion: 4 });
  });
});
