import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { BadFileError } from '../../src/errors.js';
import { dedupeLatest, latestFirstOrder } from '../../src/engine/dedupe.js';

let session: DuckSession;

beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

/** A loaded batch: composite key (a, b), ~1/3 of keys repeated across files and rows. */
async function batch(name: string): Promise<void> {
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${name} AS SELECT range % 7 AS a, (range // 7) % 50 AS b, range % 5 AS ts, range AS v, ` +
      `'f' || (range % 3) AS _source_file, TIMESTAMPTZ '2026-11-01' AS _source_modified, range + 1 AS _source_row FROM range(500)`,
  );
}

describe('dedupeLatest', () => {
  it('keeps exactly the rows a latest-first row_number over every row keeps, and replaces the input', async () => {
    await batch('ref_in');
    const expected = await session.allJson(
      `SELECT v::INT AS v FROM ref_in QUALIFY row_number() OVER (PARTITION BY a, b ORDER BY ${latestFirstOrder('ts')}) = 1 ORDER BY v`,
    );
    await batch('in_place');
    await session.run('CREATE OR REPLACE TEMP TABLE out_place AS SELECT 1 AS stale');
    const n = await dedupeLatest(session, {
      input: 'in_place',
      output: 'out_place',
      keyColumns: ['a', 'b'],
      orderBy: 'ts',
    });
    expect(n).toBe(350);
    expect(await session.allJson('SELECT v::INT AS v FROM out_place ORDER BY v')).toEqual(expected);
    expect(
      await session.allJson(
        "SELECT count(*)::INT AS n FROM duckdb_tables() WHERE table_name = 'in_place'",
      ),
    ).toEqual([{ n: 0 }]);
  });

  it('dedupes in place when output is input', async () => {
    await batch('same');
    expect(
      await dedupeLatest(session, {
        input: 'same',
        output: 'same',
        keyColumns: ['a', 'b'],
        orderBy: 'ts',
      }),
    ).toBe(350);
  });

  it('a NULL key names the file, the row and only the key columns NULL in it', async () => {
    // scd2 dedupes on key and orderBy: a row with a NULL order_id and seq 3 must not be said to
    // have a NULL seq.
    await session.run(
      `CREATE OR REPLACE TEMP TABLE nk AS SELECT * FROM (VALUES (1, 1, 'in/a.csv', 1), (NULL, 3, 'in/a.csv', 2), (NULL, NULL, 'in/a.csv', 3)) ` +
        `AS t(order_id, seq, _source_file, _source_row)`,
    );
    const opts = { input: 'nk', output: 'nk_out', keyColumns: ['order_id', 'seq'], orderBy: 'seq' };
    const err = await dedupeLatest(session, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).message).toBe(
      '[load] in/a.csv row 2: key column "order_id" is null',
    );
    expect((err as BadFileError).context).toMatchObject({
      key: 'in/a.csv',
      row: 2,
      column: 'order_id',
    });
    await session.run('DELETE FROM nk WHERE _source_row <= 2');
    const both = await dedupeLatest(session, opts).catch((e: unknown) => e);
    expect((both as BadFileError).message).toBe(
      '[load] in/a.csv row 3: key column "order_id", "seq" are null',
    );
  });
});
