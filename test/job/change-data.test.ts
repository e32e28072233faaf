/**
 * The job on a table that records a change data feed (`target.changeDataFeed: true`) and has a
 * CHECK constraint, local folders end to end:
 * - the first run creates the table with the feature and writes no change files (only inserts);
 * - later runs that update and delete (`deleteWhen`) commit change files holding exactly the
 *   rows they changed, whether files are rewritten or get deletion vectors;
 * - a file with a row that breaks the constraint fails the run naming the constraint, the file and
 *   the row, nothing is committed and the watermark stays; under `onBadFile: quarantine` the file
 *   is set aside like any bad file and the rest loads.
 */
import { readdir, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TableConfig } from '../../src/delta/table-config.js';
import { ConstraintViolationError } from '../../src/errors.js';
import { openTarget } from '../../src/job/open.js';
import { LocalStorage } from '../../src/storage/local.js';
import { cdcActions, changeRows, commitActions } from '../helpers/change-data.js';
import {
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
} from './helpers.js';
import { openTable } from '../../scripts/lib/tables.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 };

/** A job over a fresh local landing zone into a fresh local table that records changes. */
async function cdfJob(target: Record<string, unknown> = {}, job: Record<string, unknown> = {}) {
  const sourceDir = await tempDir('cdf-src', dirs);
  const tableDir = await tempDir('cdf-t', dirs);
  const setup = makeConfig({
    source: { uri: sourceDir, discover: byDay },
    target: {
      ...mergeTarget(tableDir),
      deleteWhen: "status = 'cancelled'",
      changeDataFeed: true,
      ...target,
    },
    ...job,
  });
  return {
    setup,
    tableDir,
    source: new LocalStorage(sourceDir),
    table: openTarget(setup.job, setup.storage),
  };
}

/** Every file under the table's folder: data, log and tidemark's own (ledger, tombstones). */
async function tableFiles(t: { tableDir: string }): Promise<string[]> {
  const entries = await readdir(t.tableDir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

type Setup = Awaited<ReturnType<typeof cdfJob>>;

/** The change rows of `version`: order_id, status, seq, rid and _change_type. */
async function changesOf(t: Setup, version: number) {
  const rows = await changeRows(
    session,
    t.table,
    version,
    `order_id, _change_type = 'update_postimage'`,
  );
  return rows.map((r) => ({
    order_id: Number(r['order_id']),
    status: r['status'],
    seq: Number(r['seq']),
    rid: r['rid'],
    _change_type: r['_change_type'],
  }));
}

const modes = [
  ['rewriting files', {}],
  ['marking deletion vectors', { rewriteFilesBelow: 1, rewriteDeletedShare: 1 }],
] as const;

describe.each(modes)('a job whose table records a change data feed, %s', (mode, dvSettings) => {
  it('writes no change files for the first load, then exactly the changes of each later run', async () => {
    const t = await cdfJob(dvSettings);
    const [o1, o2, o3, o4] = orders(
      [1, 'placed', 1],
      [2, 'placed', 1],
      [3, 'placed', 1],
      [4, 'placed', 1],
    );
    await land(t.source, session, '2025/03/01/a.csv', [o1!, o2!, o3!, o4!]);
    const first = await run(t.setup);
    const created = (await readTarget(session, t.setup)).snapshot!;
    expect(created.metadata.configuration['delta.enableChangeDataFeed']).toBe('true');
    expect(cdcActions(await commitActions(t.table, first.tableVersion!))).toEqual([]);

    // Run 2: update 2, cancel (delete) 3, insert 5; a late stale row of 1 changes nothing.
    const [u2, c3, n5, late1] = orders(
      [2, 'shipped', 2],
      [3, 'cancelled', 2],
      [5, 'placed', 1],
      [1, 'late', 0],
    );
    await land(t.source, session, '2025/03/02/b.csv', [u2!, c3!, n5!, late1!]);
    const second = await run(t.setup);
    expect(second).toMatchObject({ inserted: 1, updated: 1, deleted: 1, skippedStale: 1 });
    const withDv = (await commitActions(t.table, second.tableVersion!)).some(
      (a) => 'add' in a && a.add.deletionVector,
    );
    expect(withDv).toBe(mode === 'marking deletion vectors');
    expect(await changesOf(t, second.tableVersion!)).toEqual([
      { order_id: 2, status: 'placed', seq: 1, rid: o2!.rid, _change_type: 'update_preimage' },
      { order_id: 2, status: 'shipped', seq: 2, rid: u2!.rid, _change_type: 'update_postimage' },
      { order_id: 3, status: 'placed', seq: 1, rid: o3!.rid, _change_type: 'delete' },
      { order_id: 5, status: 'placed', seq: 1, rid: n5!.rid, _change_type: 'insert' },
    ]);

    // Run 3: cancel 2 (its updated row is the preimage now), update 4.
    const [c2, u4] = orders([2, 'cancelled', 3], [4, 'shipped', 2]);
    await land(t.source, session, '2025/03/03/c.csv', [c2!, u4!]);
    const third = await run(t.setup);
    expect(await changesOf(t, third.tableVersion!)).toEqual([
      { order_id: 2, status: 'shipped', seq: 2, rid: u2!.rid, _change_type: 'delete' },
      { order_id: 4, status: 'placed', seq: 1, rid: o4!.rid, _change_type: 'update_preimage' },
      { order_id: 4, status: 'shipped', seq: 2, rid: u4!.rid, _change_type: 'update_postimage' },
    ]);
    const table = await readTarget(session, t.setup);
    expect(
      table.rows.map((r) => [r.order_id, r.status]).sort((a, b) => Number(a[0]) - Number(b[0])),
    ).toEqual([
      [1, 'placed'],
      [4, 'shipped'],
      [5, 'placed'],
    ]);
  });

  it('a file written again with the same rows (other bytes: its columns reordered; a new modification time) is reloaded and changes nothing: no update, no deletion vector, no change file (issue 20, item 6)', async () => {
    const t = await cdfJob(dvSettings);
    const rows = orders([1, 'placed', 1], [2, 'placed', 1]);
    await land(t.source, session, '2025/03/01/a.csv', rows);
    const first = await run(t.setup);
    const before = (await readTarget(session, t.setup)).snapshot!;
    await t.source.write(
      '2025/03/01/a.csv',
      [
        'rid,seq,status,order_id',
        ...rows.map((r) => `${r.rid},${r.seq},${r.status},${r.order_id}`),
      ].join('\n') + '\n',
    );
    const stamp = new Date(Date.now() + 5_000);
    await utimes(t.source.localPath('2025/03/01/a.csv')!, stamp, stamp);
    const second = await run(t.setup);
    expect(second).toMatchObject({
      filesLoaded: 1,
      updated: 0,
      unchanged: 2,
      inserted: 0,
      dataFilesAdded: 0,
      dataFilesRemoved: 0,
      filesWithNewDeletionVector: 0,
    });
    expect(second.tableVersion).toBe(first.tableVersion! + 1); // the job's state alone
    const actions = await commitActions(t.table, second.tableVersion!);
    expect(cdcActions(actions)).toEqual([]);
    expect(actions.filter((a) => 'add' in a || 'remove' in a)).toEqual([]);
    // The data files are the same ones, holding the rows as first loaded.
    const after = (await readTarget(session, t.setup)).snapshot!;
    expect(after.files.map((f) => f.path)).toEqual(before.files.map((f) => f.path));
  });
});

/** Add the CHECK constraint `seq_positive` (seq > 0) to the job's table, as ALTER TABLE … ADD CONSTRAINT does. */
async function addConstraint(t: Setup): Promise<void> {
  const table = openTable(t.table, session);
  const snapshot = (await table.snapshot())!;
  const configuration = {
    ...snapshot.metadata.configuration,
    'delta.constraints.seq_positive': 'seq > 0',
  };
  await table.commit({
    actions: [
      {
        protocol: TableConfig.of(snapshot.protocol, snapshot.metadata).withFeature(
          'checkConstraints',
          { reader: false },
        ),
      },
      { metaData: { ...snapshot.metadata, configuration } },
    ],
    operation: 'ADD CONSTRAINT',
    read: { readVersion: snapshot.version, partitions: 'all', files: [], appIds: [] },
    isBlindAppend: false,
  });
}

describe('a job whose table has a CHECK constraint', () => {
  it('fails the run on a breaking row, naming the constraint, the file and the row; nothing is committed or written', async () => {
    const t = await cdfJob();
    await land(t.source, session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
    await run(t.setup);
    await addConstraint(t);
    const before = await readTarget(session, t.setup);
    const filesBefore = await tableFiles(t);
    await land(t.source, session, '2025/03/02/good.csv', orders([2, 'placed', 1]));
    await land(
      t.source,
      session,
      '2025/03/02/bad.csv',
      orders([3, 'placed', 1], [4, 'placed', -1]),
    );
    const outcome = await runOutcome(t.setup);
    expect(outcome.ok).toBe(false);
    const err = (outcome as { error: unknown }).error as ConstraintViolationError;
    expect(err).toBeInstanceOf(ConstraintViolationError);
    expect(err.constraint).toBe('CHECK constraint seq_positive');
    expect(err.context).toMatchObject({
      key: expect.stringMatching(/^file:\/\/\/.*\/2025\/03\/02\/bad\.csv$/),
      row: 2,
      keyValue: 'order_id=4',
    });
    expect(err.message).toContain('violates CHECK constraint seq_positive (seq > 0)');
    const after = await readTarget(session, t.setup);
    expect(after.snapshot!.version).toBe(before.snapshot!.version);
    expect(after.state.discovery).toEqual(before.state.discovery);
    // Refused before the commit point: not even the batch's ledger file is written.
    expect(await tableFiles(t)).toEqual(filesBefore);
  });

  it('under onBadFile: quarantine, sets the file aside and loads the rest', async () => {
    const t = await cdfJob({}, { onBadFile: 'quarantine' });
    await land(t.source, session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
    await run(t.setup);
    await addConstraint(t);
    await land(t.source, session, '2025/03/02/good.csv', orders([2, 'placed', 1]));
    await land(
      t.source,
      session,
      '2025/03/02/bad.csv',
      orders([3, 'placed', 1], [4, 'placed', -1]),
    );
    const report = await run(t.setup);
    expect(report.quarantined).toEqual([
      {
        key: '2025/03/02/bad.csv',
        reason: expect.stringContaining('violates CHECK constraint seq_positive (seq > 0)'),
      },
    ]);
    expect((await readTarget(session, t.setup)).rows.map((r) => r.order_id).sort()).toEqual([1, 2]);
  });
});
