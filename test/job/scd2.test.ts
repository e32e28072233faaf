/**
 * scd2 mode end to end (docs/concepts.md, scd2): a local landing zone of order events (partition
 * discovery) and a local target read back like any Delta reader. Each key's versions carry
 * valid_from (its seq), valid_to (the next version's seq, or the delete's) and is_current, and
 * the history is the one every row arriving in order by seq would give, whatever the batches and
 * runs: in order, a late middle version splitting an interval, an equal version a no-op, a change
 * only in untracked columns updating the version in place, a delete closing the current version
 * and a later version re-opening the key, a backfill, and a crash before the commit (an exception
 * thrown from a RunContext hook: fault injection standing in for a process dying there) after
 * which the rerun writes exactly what one run would.
 */
import { describe, expect, it } from 'vitest';
import { MergeInputError } from '../../src/errors.js';
import { runBackfill } from '../../src/job/backfill/run.js';
import { openTarget } from '../../src/job/open.js';
import { silentLogger } from '../../src/log/logger.js';
import { readTable } from '../../src/engine/scan.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';
import {
  checkTarget,
  DuckSession,
  land,
  makeConfig,
  orders,
  run,
  runOutcome,
  scd2History,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

/** A fresh landing zone and target; `target` settings over scd2 mode on order_id by seq. */
async function setup(target: Record<string, unknown> = {}, job: Record<string, unknown> = {}) {
  const src = await tempDir('scd2-src', dirs);
  const dst = await tempDir('scd2-dst', dirs);
  const config = makeConfig({
    source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 } },
    target: { uri: dst, mode: 'scd2', key: ['order_id'], orderBy: 'seq', ...target },
    ...job,
  });
  return { source: new LocalStorage(src), config };
}

/** One version as a reader sees it: `id status from-to*` (`*` current; `…` open). */
type Version = string;

/** The table's versions, by key then valid_from, as `Version` strings. */
const history = (config: ReturnType<typeof makeConfig>): Promise<Version[]> =>
  scd2History(session, config);

describe('scd2 mode', () => {
  it('in order: each change closes the current version and opens a new one', async () => {
    const { source, config } = await setup();
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 2, tableVersion: 0 });
    expect(await history(config)).toEqual(['1 placed 1-…*', '2 placed 1-…*']);

    await land(source, session, '2025/03/02/a.csv', orders([1, 'paid', 5]));
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 1, updated: 1 });
    expect(await history(config)).toEqual(['1 placed 1-5', '1 paid 5-…*', '2 placed 1-…*']);

    // Several versions of a key in one batch are all history, not duplicates.
    await land(
      source,
      session,
      '2025/03/03/a.csv',
      orders([1, 'shipped', 7], [1, 'delivered', 9], [2, 'paid', 3]),
    );
    await run(config);
    expect(await history(config)).toEqual([
      '1 placed 1-5',
      '1 paid 5-7',
      '1 shipped 7-9',
      '1 delivered 9-…*',
      '2 placed 1-3',
      '2 paid 3-…*',
    ]);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('out of order: a late middle version splits an interval; a late oldest one comes first', async () => {
    const { source, config } = await setup();
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [1, 'shipped', 9]));
    await run(config);
    await land(source, session, '2025/03/02/a.csv', orders([1, 'paid', 5], [2, 'paid', 5]));
    const late = await run(config);
    expect(late).toMatchObject({ status: 'succeeded', inserted: 2, updated: 1 });
    expect(await history(config)).toEqual([
      '1 placed 1-5',
      '1 paid 5-9',
      '1 shipped 9-…*',
      '2 paid 5-…*',
    ]);
    await land(source, session, '2025/03/03/a.csv', orders([2, 'placed', 2]));
    await run(config);
    expect(await history(config)).toEqual([
      '1 placed 1-5',
      '1 paid 5-9',
      '1 shipped 9-…*',
      '2 placed 2-5',
      '2 paid 5-…*',
    ]);
  });

  it('an equal version is a no-op; an equal orderBy with other values corrects it in place', async () => {
    const { source, config } = await setup({ trackColumns: ['status'] });
    const first = orders([1, 'placed', 1], [1, 'paid', 5]);
    await land(source, session, '2025/03/01/a.csv', first);
    await run(config);
    const before = await history(config);
    // The same rows again, from another file: nothing changes but lineage, which opens no version.
    await land(
      source,
      session,
      '2025/03/02/a.csv',
      first.map((r) => ({ ...r })),
    );
    const replay = await run(config);
    expect(replay).toMatchObject({ status: 'succeeded', inserted: 0, deleted: 0 });
    expect(await history(config)).toEqual(before);
    // A correction of version 5 (same seq, other status): replaced in place, no version opened.
    await land(source, session, '2025/03/03/a.csv', orders([1, 'refunded', 5]));
    const fix = await run(config);
    expect(fix).toMatchObject({ inserted: 0, updated: 1, deleted: 0 });
    expect(await history(config)).toEqual(['1 placed 1-5', '1 refunded 5-…*']);
  });

  it('a change only in untracked columns updates the current version in place', async () => {
    const { source, config } = await setup({ trackColumns: ['status'] });
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
    await run(config);
    const touched = orders([1, 'placed', 4]);
    await land(source, session, '2025/03/02/a.csv', touched);
    expect(await run(config)).toMatchObject({ inserted: 0, updated: 1 });
    expect(await history(config)).toEqual(['1 placed 1-…*']);
    // The version holds the latest row's values: its seq and rid are those of the update.
    const storage = openTarget(config.job, config.storage);
    const snapshot = await openTable(storage, session, { singleWriter: false }).snapshot();
    const [row] = await readTable(session, scanSource(storage), snapshot!);
    expect(row).toMatchObject({ seq: 4n, rid: touched[0]!.rid, valid_from: 1n });
    await land(source, session, '2025/03/03/a.csv', orders([1, 'paid', 6]));
    await run(config);
    expect(await history(config)).toEqual(['1 placed 1-6', '1 paid 6-…*']);
  });

  it('a delete closes the current version; a later version re-opens the key; a delete before its insert is remembered', async () => {
    const { source, config } = await setup({ deleteWhen: "status = 'deleted'" });
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    await run(config);
    await land(source, session, '2025/03/02/a.csv', orders([1, 'deleted', 4]));
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 0, updated: 1 });
    expect(await history(config)).toEqual(['1 placed 1-4', '2 placed 1-…*']);
    // Re-inserted after the delete: a new current version, the gap 4-6 shows the key was gone.
    await land(source, session, '2025/03/03/a.csv', orders([1, 'placed', 6]));
    await run(config);
    expect(await history(config)).toEqual(['1 placed 1-4', '1 placed 6-…*', '2 placed 1-…*']);
    // Late versions: 3 splits the first interval (closed by the delete at 4); 5 follows the delete and lasts until 6.
    await land(source, session, '2025/03/04/a.csv', orders([1, 'paid', 5], [1, 'paid', 3]));
    await run(config);
    expect(await history(config)).toEqual([
      '1 placed 1-3',
      '1 paid 3-4',
      '1 paid 5-6',
      '1 placed 6-…*',
      '2 placed 1-…*',
    ]);
    // A delete of a key not yet in the table (CDC sent it first): the insert older than it arrives closed.
    await land(source, session, '2025/03/05/a.csv', orders([3, 'deleted', 8]));
    await run(config);
    await land(source, session, '2025/03/06/a.csv', orders([3, 'placed', 2]));
    await run(config);
    expect((await history(config)).filter((v) => v.startsWith('3 '))).toEqual(['3 placed 2-8']);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('at one orderBy a delete wins over a version, in one batch as across batches', async () => {
    // Key 1 (one file): the version at 4 comes after the delete at 4 in the file; key 2 (two
    // files, one batch): the later file holds the version at 4. Key 3: the same rows in two runs.
    const { source, config } = await setup({ deleteWhen: "status = 'deleted'" });
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    await land(source, session, '2025/03/01/b.csv', orders([3, 'placed', 1]));
    await run(config);
    await land(
      source,
      session,
      '2025/03/02/a.csv',
      orders([1, 'deleted', 4], [1, 'paid', 4], [2, 'deleted', 4], [3, 'deleted', 4]),
    );
    await land(source, session, '2025/03/02/b.csv', orders([2, 'paid', 4]));
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 0 });
    await land(source, session, '2025/03/03/a.csv', orders([3, 'paid', 4]));
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 0 });
    expect(await history(config)).toEqual(['1 placed 1-4', '2 placed 1-4', '3 placed 1-4']);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('a deleteWhen that does not evaluate on the batch, or is two statements, is refused before anything is written', async () => {
    for (const deleteWhen of ['no_such_column = 1', "status = 'deleted'; DROP TABLE x"]) {
      const { source, config } = await setup({ deleteWhen });
      await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [1, 'deleted', 1]));
      const outcome = await runOutcome(config);
      expect(outcome.ok, deleteWhen).toBe(false);
      const err = !outcome.ok ? outcome.error : null;
      expect(err, deleteWhen).toBeInstanceOf(MergeInputError);
      expect((err as MergeInputError).kind).toBe('usage');
      expect((err as Error).message).toContain(
        `invalid deleteWhen expression ${JSON.stringify(deleteWhen)}`,
      );
      expect(await history(config)).toEqual([]);
    }
  });

  it('one file per batch, several runs: the same history as one batch', async () => {
    const rows = orders(
      [1, 'placed', 1],
      [1, 'shipped', 7],
      [1, 'paid', 4],
      [2, 'placed', 2],
      [2, 'paid', 3],
      [1, 'delivered', 9],
    );
    const files = ['2025/03/02/a.csv', '2025/03/01/b.csv', '2025/03/03/c.csv'];
    const split = [rows.slice(0, 2), rows.slice(2, 4), rows.slice(4)];
    const one = await setup();
    for (const [i, f] of files.entries()) await land(one.source, session, f, split[i]!);
    await run(one.config);
    const byFile = await setup({}, { maxFilesPerBatch: 1 });
    await land(byFile.source, session, files[0]!, split[0]!);
    await run(byFile.config);
    await land(byFile.source, session, files[1]!, split[1]!);
    await land(byFile.source, session, files[2]!, split[2]!);
    expect(await run(byFile.config)).toMatchObject({ status: 'succeeded', commits: 2 });
    expect(await history(byFile.config)).toEqual(await history(one.config));
    expect(await history(one.config)).toEqual([
      '1 placed 1-4',
      '1 paid 4-7',
      '1 shipped 7-9',
      '1 delivered 9-…*',
      '2 placed 2-3',
      '2 paid 3-…*',
    ]);
  });

  it('a backfill of files already loaded changes nothing; one of new files places them in history', async () => {
    const { source, config } = await setup();
    await land(source, session, '2025/03/02/a.csv', orders([1, 'placed', 1], [1, 'paid', 5]));
    await run(config);
    const before = await history(config);
    const ctx = { storage: config.storage, logger: silentLogger(), tty: false };
    const again = await runBackfill(config.job, ctx, { from: '2025-03-02', to: '2025-03-02' });
    expect(again.ok).toBe(true);
    expect(await history(config)).toEqual(before);
    // An older partition the run never saw (before its start): the backfill puts its version in the middle.
    await land(source, session, '2025/03/01/old.csv', orders([1, 'quoted', 3]));
    const old = await runBackfill(config.job, ctx, { from: '2025-03-01', to: '2025-03-01' });
    expect(old.ok).toBe(true);
    expect(await history(config)).toEqual(['1 placed 1-3', '1 quoted 3-5', '1 paid 5-…*']);
  });

  it('a crash before the commit leaves the history as it was; the rerun writes it once (fault injection through a hook)', async () => {
    for (const point of ['afterWrite', 'beforeCommit'] as const) {
      const { source, config } = await setup();
      await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [1, 'paid', 5]));
      await run(config);
      await land(source, session, '2025/03/02/a.csv', orders([1, 'shipped', 3], [2, 'placed', 2]));
      const crashed = await runOutcome(config, {
        hooks: {
          [point]: () => {
            throw new Error(`crash at ${point}`);
          },
        },
      });
      expect(crashed.ok).toBe(false);
      expect(await history(config)).toEqual(['1 placed 1-5', '1 paid 5-…*']);
      expect(await run(config)).toMatchObject({ status: 'succeeded', commits: 1 });
      const after = await history(config);
      expect(after).toEqual(['1 placed 1-3', '1 shipped 3-5', '1 paid 5-…*', '2 placed 2-…*']);
      expect(await run(config)).toMatchObject({ status: 'nothing-new' });
      expect(await history(config)).toEqual(after);
    }
  });
});
