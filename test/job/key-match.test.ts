/**
 * A key is a key (issue 19): the job's MERGE matches a stored row on the key columns alone, in
 * whatever partition it sits. A row whose partition value changes moves (removed from its old
 * partition by a rewrite or a deletion vector, written in the new one), and a delete deletes its
 * key whatever partition value, or NULL, the delete row carries. End to end: the real job over
 * local CSV landing folders, real DuckDB, the Delta log read back by a fresh reader.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tableRows } from './drift-helpers.js';
import {
  checkTarget,
  DuckSession,
  makeConfig,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

/** A landing folder and a table folder. */
async function zone(): Promise<{ landing: string; table: string }> {
  const dir = await tempDir('key-match', dirs);
  return { landing: path.join(dir, 'landing'), table: path.join(dir, 'table') };
}

async function landCsv(landing: string, key: string, text: string): Promise<void> {
  const file = path.join(landing, ...key.split('/'));
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text);
}

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };

describe.each([
  // Files this small are always rewritten unless size is left out of the choice (rewriteFilesBelow 0).
  { label: 'rewritten files', dvs: { deletionVectors: false } },
  { label: 'deletion vectors', dvs: { deletionVectors: true, rewriteFilesBelow: 0 } },
])('MERGE on the key alone ($label)', ({ dvs }) => {
  it('an order whose status (the partition column) changes moves: one row, in its new partition, counted as an update', async () => {
    const { landing, table } = await zone();
    const setup = makeConfig({
      source: { uri: landing, discover: byDay },
      target: { uri: table, key: ['order_id'], orderBy: 'seq', partitionBy: ['status'], ...dvs },
    });
    await landCsv(
      landing,
      '2026/03/01/a.csv',
      'order_id,status,seq\n1,new,1\n2,new,1\n3,new,1\n4,new,1\n',
    );
    expect(await run(setup)).toMatchObject({ inserted: 4 });
    await landCsv(landing, '2026/03/02/b.csv', 'order_id,status,seq\n1,paid,2\n');
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      rowsRead: 1,
      inserted: 0,
      updated: 1,
      deleted: 0,
    });
    expect(await tableRows(session, setup, 'order_id')).toEqual([
      { order_id: '1', status: 'paid', seq: '2' },
      { order_id: '2', status: 'new', seq: '1' },
      { order_id: '3', status: 'new', seq: '1' },
      { order_id: '4', status: 'new', seq: '1' },
    ]);
    // The new version sits in status=paid; the old one is gone from status=new (its file rewritten or given a vector).
    const { snapshot } = await readTarget(session, setup);
    const rowsIn = (status: string) =>
      snapshot!.files
        .filter((f) => f.partitionValues['status'] === status)
        .reduce(
          (n, f) => n + (f.parsedStats?.numRecords ?? 0) - (f.deletionVector?.cardinality ?? 0),
          0,
        );
    expect([rowsIn('new'), rowsIn('paid')]).toEqual([3, 1]);
    expect(
      snapshot!.files.some((f) => f.deletionVector !== undefined && f.deletionVector !== null),
    ).toBe(dvs.deletionVectors);
    // And back again, with an older row in between that must not win.
    await landCsv(landing, '2026/03/03/c.csv', 'order_id,status,seq\n1,new,3\n2,shipped,0\n');
    expect(await run(setup)).toMatchObject({ updated: 1, skippedStale: 1, inserted: 0 });
    expect((await tableRows(session, setup, 'order_id')).slice(0, 2)).toEqual([
      { order_id: '1', status: 'new', seq: '3' },
      { order_id: '2', status: 'new', seq: '1' },
    ]);
    expect((await checkTarget(session, setup)).problems).toEqual([]);
  });

  it('a delete whose partition value differs or is NULL deletes the key where it is (CDC deletes carry only the key)', async () => {
    const { landing, table } = await zone();
    const setup = makeConfig({
      source: { uri: landing, discover: byDay },
      target: {
        uri: table,
        key: ['id'],
        orderBy: 'seq',
        partitionBy: ['region'],
        deleteWhen: "op = 'D'",
        ...dvs,
      },
    });
    await landCsv(
      landing,
      '2026/03/01/a.csv',
      'id,seq,region,op\n1,1,eu,I\n2,1,eu,I\n3,1,us,I\n4,1,us,I\n5,1,eu,I\n',
    );
    expect(await run(setup)).toMatchObject({ inserted: 5 });
    await landCsv(landing, '2026/03/02/b.csv', 'id,seq,region,op\n1,2,,D\n3,2,eu,D\n');
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      deleted: 2,
      inserted: 0,
      updated: 0,
    });
    expect((await tableRows(session, setup, 'id')).map((r) => r['id'])).toEqual(['2', '4', '5']);
    // The deletes are remembered by key: an older insert of key 1 in any partition stays out.
    await landCsv(landing, '2026/03/03/c.csv', 'id,seq,region,op\n1,1,us,I\n');
    expect(await run(setup)).toMatchObject({ inserted: 0, skippedStale: 1 });
    expect((await tableRows(session, setup, 'id')).map((r) => r['id'])).toEqual(['2', '4', '5']);
    expect((await checkTarget(session, setup)).problems).toEqual([]);
  });
});
