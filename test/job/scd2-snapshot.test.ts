/**
 * Snapshot sources in scd2 mode end to end (docs/concepts.md, Snapshot sources): daily full
 * extracts (partition discovery) into a local history table. The keys whose current version is
 * open and that the newest extract lacks are closed at its as-of time (`source.snapshotAsOf`),
 * through scd2's delete path; an unchanged key is a no-op; a key back in a later extract opens a
 * new version; the closes are bounded by maxDeleteShare until --allow-large-delete; an extract
 * older than the newest applied closes nothing; an as-of that is missing, NULL, mixed, does not
 * compare with orderBy, or an empty extract, is refused naming file, row and column.
 */
import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { openTarget } from '../../src/job/open.js';
import { SnapshotAsOfError, SnapshotDeleteRefusedError } from '../../src/errors.js';
import { readTable } from '../../src/engine/scan.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';
import {
  checkTarget,
  DuckSession,
  makeConfig,
  readTarget,
  run,
  runOutcome,
  scd2History,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

async function setup(source: Record<string, unknown> = {}) {
  const src = await tempDir('scd2-snap-src', dirs);
  const dst = await tempDir('scd2-snap-dst', dirs);
  const config = makeConfig({
    source: {
      uri: src,
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 },
      snapshot: true,
      snapshotAsOf: 'as_of',
      ...source,
    },
    target: { uri: dst, mode: 'scd2', key: ['order_id'], orderBy: 'seq' },
  });
  return { source: new LocalStorage(src), config };
}

type Row = [id: number, status: string, seq: number, asOf: number | string | null];

/** An extract as CSV: order_id, status, seq, rid (`r<id>-<seq>`: the same row in every extract), as_of (an empty field is NULL). */
function extract(...rows: Row[]): string {
  const lines = rows.map(
    ([id, status, seq, asOf]) => `${id},${status},${seq},r${id}-${seq},${asOf ?? ''}`,
  );
  return ['order_id,status,seq,rid,as_of', ...lines].join('\n') + '\n';
}

/** Rows of one extract, all as of `asOf`. */
const at = (asOf: number, ...rows: Array<[number, string, number]>): Row[] =>
  rows.map(([id, status, seq]) => [id, status, seq, asOf]);

const history = (config: ReturnType<typeof makeConfig>) => scd2History(session, config);

async function tableRows(config: ReturnType<typeof makeConfig>) {
  const storage = openTarget(config.job, config.storage);
  const snapshot = await openTable(storage, session, { singleWriter: false }).snapshot();
  return { snapshot: snapshot!, rows: await readTable(session, scanSource(storage), snapshot!) };
}

describe('snapshot sources in scd2 mode', () => {
  it('closes the absent keys at the as-of; unchanged keys stay; a key back opens a version', async () => {
    const { source, config } = await setup();
    const day1 = at(10, [1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1], [4, 'placed', 1]);
    await source.write('2025/03/01/part-0.csv', extract(...day1));
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 4 });

    // Key 4 is gone from the source as of 20; key 3 changed at 15. Two part files, one extract.
    await source.write(
      '2025/03/02/part-0.csv',
      extract(...at(20, [1, 'placed', 1], [2, 'placed', 1])),
    );
    await source.write('2025/03/02/part-1.csv', extract(...at(20, [3, 'paid', 15])));
    const second = await run(config);
    // Closing a version is counted as scd2 counts every close: its stored row updated.
    expect(second).toMatchObject({
      status: 'succeeded',
      commits: 1,
      inserted: 1,
      updated: 2,
      deleted: 0,
    });
    expect(await history(config)).toEqual([
      '1 placed 1-…*',
      '2 placed 1-…*',
      '3 placed 1-15',
      '3 paid 15-…*',
      '4 placed 1-20',
    ]);
    let view = await tableRows(config);
    const four = view.rows.filter((r) => Number(r['order_id']) === 4);
    expect(four).toMatchObject([{ valid_from: 1n, valid_to: 20n, is_current: false, seq: 1n }]);
    // The as-of is metadata of the extract: not a column of the table.
    expect(view.snapshot.schema.fields.map((f) => f.name)).not.toContain('as_of');
    expect((await readTarget(session, config)).state.snapshotAsOf).toBe('20');

    // The same extract as of 30: every key unchanged, a no-op (no version, no file written).
    const before = view.snapshot.version;
    await source.write(
      '2025/03/03/part-0.csv',
      extract(...at(30, [1, 'placed', 1], [2, 'placed', 1], [3, 'paid', 15])),
    );
    expect(await run(config)).toMatchObject({
      status: 'succeeded',
      inserted: 0,
      updated: 0,
      deleted: 0,
      dataFilesAdded: 0,
    });
    view = await tableRows(config);
    expect(view.snapshot.version).toBe(before + 1);
    expect(view.snapshot.files.map((f) => f.path).sort()).toEqual(
      (await tableFilesAt(config, before)).sort(),
    );

    // Key 4 is back (re-inserted at 35): a new current version; the gap 20-35 says it was gone.
    await source.write(
      '2025/03/04/part-0.csv',
      extract(...at(40, [1, 'placed', 1], [2, 'placed', 1], [3, 'paid', 15], [4, 'placed', 35])),
    );
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 1, updated: 0 });
    expect(await history(config)).toEqual([
      '1 placed 1-…*',
      '2 placed 1-…*',
      '3 placed 1-15',
      '3 paid 15-…*',
      '4 placed 1-20',
      '4 placed 35-…*',
    ]);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('refuses closing more than maxDeleteShare of the open keys until --allow-large-delete; an older extract closes nothing', async () => {
    const { source, config } = await setup();
    await source.write(
      '2025/03/01/a.csv',
      extract(...at(10, [1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1], [4, 'placed', 1])),
    );
    await run(config);
    // Key 4 closed as of 20: 3 keys remain open.
    await source.write(
      '2025/03/02/a.csv',
      extract(...at(20, [1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1])),
    );
    await run(config);
    // A cut-off extract: it would close 2 of the 3 open keys (67 %). Refused, exit 1, nothing committed.
    await source.write('2025/03/03/a.csv', extract(...at(30, [1, 'placed', 1])));
    const refused = await runOutcome(config);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error).toBeInstanceOf(SnapshotDeleteRefusedError);
    expect((refused.error as Error).message).toMatch(
      /would close 2 of the 3 keys with an open current version .*\(66\.7 %\), more than source\.maxDeleteShare \(50 %\).*--allow-large-delete/,
    );
    expect((refused.error as SnapshotDeleteRefusedError).context).toMatchObject({
      absentKeys: 2,
      tableKeys: 3,
      field: 'source.maxDeleteShare',
    });
    expect(exitCodeFor(refused.error)).toBe(1);
    expect((await readTarget(session, config)).snapshot?.version).toBe(1);
    expect(await run(config, { allowLargeDelete: true })).toMatchObject({
      status: 'succeeded',
      updated: 2,
      tableVersion: 2,
    });
    expect(await history(config)).toEqual([
      '1 placed 1-…*',
      '2 placed 1-30',
      '3 placed 1-30',
      '4 placed 1-20',
    ]);

    // An extract of a newer partition taken earlier (as of 25) lacks key 1: the extract of 30
    // had it, and its unchanged row left no trace in the table, so the older one closes nothing.
    // Its rows load as usual (key 5 opens at 22).
    await source.write('2025/03/04/a.csv', extract(...at(25, [5, 'placed', 22])));
    const older = await run(config);
    expect(older).toMatchObject({ status: 'succeeded', inserted: 1, updated: 0, deleted: 0 });
    expect(await history(config)).toEqual([
      '1 placed 1-…*',
      '2 placed 1-30',
      '3 placed 1-30',
      '4 placed 1-20',
      '5 placed 22-…*',
    ]);
    expect((await readTarget(session, config)).state.snapshotAsOf).toBe('30');
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('with snapshotPattern: a version newer than the as-of stays current; the close lands in order', async () => {
    const { source, config } = await setup({ snapshotPattern: 'full-*.csv' });
    await source.write(
      '2025/03/01/full-0.csv',
      extract(...at(10, [1, 'placed', 1], [2, 'placed', 1])),
    );
    await run(config);
    // A change file (no as-of: it is no extract): key 1 paid at 50.
    await source.write('2025/03/02/changes-0.csv', 'order_id,status,seq,rid\n1,paid,50,r1-50\n');
    await run(config);
    // An extract as of 40 lacks key 1: in order, key 1 was gone from 40 until its version of 50,
    // which stays current (the as-of is older than it).
    await source.write('2025/03/03/full-1.csv', extract(...at(40, [2, 'placed', 1])));
    expect(await run(config)).toMatchObject({ status: 'succeeded', updated: 1, inserted: 0 });
    expect(await history(config)).toEqual(['1 placed 1-40', '1 paid 50-…*', '2 placed 1-…*']);
    // A late change older than the close lands before it: the close still ends it at 40.
    await source.write('2025/03/04/changes-0.csv', 'order_id,status,seq,rid\n1,packed,30,r1-30\n');
    await run(config);
    expect(await history(config)).toEqual([
      '1 placed 1-30',
      '1 packed 30-40',
      '1 paid 50-…*',
      '2 placed 1-…*',
    ]);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('a timestamp orderBy: a date-time as-of closes at that time', async () => {
    const src = await tempDir('scd2-snap-src', dirs);
    const dst = await tempDir('scd2-snap-dst', dirs);
    const config = makeConfig({
      source: {
        uri: src,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 },
        snapshot: true,
        snapshotAsOf: 'taken_at',
      },
      target: { uri: dst, mode: 'scd2', key: ['id'], orderBy: 'updated_at' },
    });
    const source = new LocalStorage(src);
    const csv = (taken: string, ...rows: string[]) =>
      ['id,status,updated_at,taken_at', ...rows.map((r) => `${r},${taken}`)].join('\n') + '\n';
    await source.write(
      '2025/03/01/a.csv',
      csv('2025-03-01 06:00:00', '1,placed,2025-02-27 10:00:00', '2,placed,2025-02-28 11:00:00'),
    );
    await run(config);
    await source.write(
      '2025/03/02/a.csv',
      csv('2025-03-02 06:00:00', '1,placed,2025-02-27 10:00:00'),
    );
    expect(await run(config)).toMatchObject({ status: 'succeeded', updated: 1, inserted: 0 });
    const { rows } = await tableRows(config);
    const closed = rows.find((r) => Number(r['id']) === 2)!;
    expect(closed['is_current']).toBe(false);
    expect(new Date(String(closed['valid_to'])).toISOString()).toBe('2025-03-02T06:00:00.000Z');
    expect(rows.find((r) => Number(r['id']) === 1)).toMatchObject({
      is_current: true,
      valid_to: null,
    });
  });

  it('refuses an extract whose as-of is missing, NULL, mixed or not comparable, and an empty one, naming file, row and column', async () => {
    const cases: Array<{ name: string; text: string; message: RegExp; row?: number }> = [
      {
        name: 'missing',
        text: 'order_id,status,seq,rid\n2,placed,1,a\n',
        message: /the extract has no column "as_of" \(in .*2025\/03\/02\/a\.csv\)/,
      },
      {
        name: 'null',
        text: extract([2, 'placed', 1, 20], [3, 'placed', 1, null]),
        message: /column "as_of" is NULL in file .*2025\/03\/02\/a\.csv, row 2/,
        row: 2,
      },
      {
        name: 'mixed',
        text: extract([2, 'placed', 1, 20], [3, 'placed', 1, 21]),
        message: /column "as_of" is "21" in file .*a\.csv, row 2, but "20" in file .*a\.csv, row 1/,
        row: 2,
      },
      {
        name: 'incomparable',
        text: extract([2, 'placed', 1, '2025-03-02'], [3, 'placed', 1, '2025-03-02']),
        message: /column "as_of" is DATE, which does not compare with orderBy "seq" \(long\)/,
        row: 1,
      },
      {
        name: 'not a number',
        text: extract([2, 'placed', 1, 'soon'], [3, 'placed', 1, 'soon']),
        message:
          /value "soon" of column "as_of" \(file .*a\.csv, row 1\) does not convert exactly to orderBy's type long/,
        row: 1,
      },
      {
        name: 'empty',
        text: 'order_id,status,seq,rid,as_of\n',
        message:
          /the extract .*2025\/03\/02\/a\.csv has no rows: an empty extract cannot say when its keys ended/,
      },
    ];
    for (const c of cases) {
      const { source, config } = await setup();
      await source.write(
        '2025/03/01/a.csv',
        extract(...at(10, [1, 'placed', 1], [2, 'placed', 1])),
      );
      await run(config);
      await source.write('2025/03/02/a.csv', c.text);
      for (const allowLargeDelete of [false, true]) {
        const outcome = await runOutcome(config, { allowLargeDelete });
        expect(outcome.ok, c.name).toBe(false);
        if (outcome.ok) return;
        const err = outcome.error as SnapshotAsOfError;
        expect(err, c.name).toBeInstanceOf(SnapshotAsOfError);
        expect(err.message, c.name).toMatch(c.message);
        expect(err.message, c.name).toMatch(/nothing was committed/);
        expect(err.context, c.name).toMatchObject({
          field: 'source.snapshotAsOf',
          column: 'as_of',
          key: expect.stringMatching(/2025\/03\/02\/a\.csv$/),
          ...(c.row === undefined ? {} : { row: c.row }),
        });
        expect(exitCodeFor(err), c.name).toBe(1);
      }
      expect((await readTarget(session, config)).snapshot?.version, c.name).toBe(0);
      expect(await history(config), c.name).toEqual(['1 placed 1-…*', '2 placed 1-…*']);
    }
  });

  it('refuses settings that do not apply', () => {
    const bad =
      (source: Record<string, unknown>, target: Record<string, unknown> = {}) =>
      () =>
        makeConfig({
          source: {
            uri: '/tmp/src',
            discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
            ...source,
          },
          target: { uri: '/tmp/dst', mode: 'scd2', key: ['order_id'], orderBy: 'seq', ...target },
        });
    expect(bad({ snapshot: true })).toThrow(
      /source\.snapshotAsOf.*is required with source\.snapshot in scd2 mode/s,
    );
    expect(bad({ snapshot: true, snapshotAsOf: 'as_of' }, { mode: 'merge' })).toThrow(
      /source\.snapshotAsOf.*applies only when target\.mode is scd2 \(it is merge\)/s,
    );
    expect(bad({ snapshotAsOf: 'as_of' })).toThrow(
      /source\.snapshotAsOf.*applies only with snapshot: true/s,
    );
    expect(bad({ snapshot: true, snapshotAsOf: 'SEQ' })).toThrow(
      /source\.snapshotAsOf.*names "SEQ", a key or orderBy column/s,
    );
    expect(bad({ snapshot: true, snapshotAsOf: 'as_of' })).not.toThrow();
  });
});

/** The data files live at `version`. */
async function tableFilesAt(config: ReturnType<typeof makeConfig>, version: number) {
  const storage = openTarget(config.job, config.storage);
  const snapshot = await openTable(storage, session, { singleWriter: false }).snapshot({ version });
  return snapshot!.files.map((f) => f.path);
}
