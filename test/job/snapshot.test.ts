/**
 * Snapshot sources end to end (docs/concepts.md, Target modes, Snapshot sources): a local landing
 * zone of daily full extracts (partition discovery) merged by key into a local table. The newest extract's absent keys are deleted in its commit; an extract that
 * would delete more than maxDeleteShare of the keys is refused naming the counts, nothing
 * committed, until --allow-large-delete; a late older extract never brings a deleted key back; with
 * snapshotPattern the change files of the same run are merged after the extract. A crash (an
 * exception thrown from a RunContext hook: fault injection standing in for a process dying there)
 * before the commit leaves the table as it was, and the rerun ends where an uninterrupted run does.
 */
import { describe, expect, it } from 'vitest';
import { SnapshotDeleteRefusedError } from '../../src/errors.js';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  checkTarget,
  DuckSession,
  expectedLatest,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

async function setup(source: Record<string, unknown> = {}) {
  const src = await tempDir('snap-src', dirs);
  const dst = await tempDir('snap-dst', dirs);
  const config = makeConfig({
    source: {
      uri: src,
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 3 },
      snapshot: true,
      ...source,
    },
    target: { uri: dst, mode: 'merge', key: ['order_id'], orderBy: 'seq' },
  });
  return { source: new LocalStorage(src), config };
}

const statuses = (rows: readonly OrderRow[]) =>
  [...rows].sort((a, b) => a.order_id - b.order_id).map((r) => [r.order_id, r.status]);
const ids = (rows: readonly OrderRow[]) => rows.map((r) => r.order_id).sort((a, b) => a - b);

describe('snapshot sources', () => {
  it('deletes the keys the newest extract lacks, bounded by maxDeleteShare, never undone by a late older extract', async () => {
    const { source, config } = await setup();
    const day1 = orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1], [4, 'placed', 1]);
    await land(source, session, '2025/03/01/part-0.csv', day1);
    expect(await run(config)).toMatchObject({ status: 'succeeded', inserted: 4, deleted: 0 });

    // Key 4 is gone from the source; key 3 changed. Two part files, one extract.
    const day2 = orders([1, 'placed', 1], [2, 'placed', 1], [3, 'paid', 2]);
    await land(source, session, '2025/03/02/part-0.csv', day2.slice(0, 2));
    await land(source, session, '2025/03/02/part-1.csv', day2.slice(2));
    const second = await run(config);
    expect(second).toMatchObject({
      status: 'succeeded',
      commits: 1,
      filesLoaded: 2,
      inserted: 0,
      deleted: 1,
      tableVersion: 1,
    });
    let view = await readTarget(session, config);
    expect(statuses(view.rows)).toEqual([
      [1, 'placed'],
      [2, 'placed'],
      [3, 'paid'],
    ]);
    expect(view.state.delivery).toEqual({ partition: '2025-03-02' });

    // A cut-off extract: it would delete 2 of 3 keys (67 %), more than 50 %. Refused, exit 1, nothing committed.
    await land(source, session, '2025/03/03/part-0.csv', orders([1, 'placed', 1]));
    const refused = await runOutcome(config);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error).toBeInstanceOf(SnapshotDeleteRefusedError);
    expect((refused.error as Error).message).toMatch(
      /would delete 2 of the 3 keys .*\(66\.7 %\), more than source\.maxDeleteShare \(50 %\).*--allow-large-delete/,
    );
    expect(exitCodeFor(refused.error)).toBe(1);
    view = await readTarget(session, config);
    expect(view.snapshot?.version).toBe(1);
    expect(ids(view.rows)).toEqual([1, 2, 3]);
    // The refusal holds on the next run too; --allow-large-delete takes it, once.
    expect((await runOutcome(config)).ok).toBe(false);
    expect(await run(config, { allowLargeDelete: true })).toMatchObject({
      status: 'succeeded',
      deleted: 2,
      tableVersion: 2,
    });
    expect(ids((await readTarget(session, config)).rows)).toEqual([1]);

    // A late file of an older extract (it still has key 2): superseded, key 2 stays deleted.
    await land(source, session, '2025/03/02/part-2.csv', orders([2, 'placed', 3]));
    const late = await run(config);
    expect(late).toMatchObject({ status: 'succeeded', filesLoaded: 0, inserted: 0 });
    expect(late.skippedByReason?.['superseded by a newer delivery']).toBe(1);
    expect(ids((await readTarget(session, config)).rows)).toEqual([1]);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it("with snapshotPattern, merges the run's change files after the extract", async () => {
    const { source, config } = await setup({ snapshotPattern: 'full-*.csv' });
    await land(
      source,
      session,
      '2025/03/01/full-0.csv',
      orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1]),
    );
    await run(config);
    // Day 2: a change inserts key 4 (not in the extract, newer than it); the extract drops key 3.
    const change = orders([4, 'placed', 1], [1, 'paid', 2]);
    await land(source, session, '2025/03/02/changes-0.csv', change);
    await land(
      source,
      session,
      '2025/03/02/full-1.csv',
      orders([1, 'placed', 1], [2, 'placed', 1]),
    );
    const second = await run(config);
    expect(second).toMatchObject({ status: 'succeeded', commits: 2, deleted: 1, inserted: 1 });
    const view = await readTarget(session, config);
    expect(statuses(view.rows)).toEqual([
      [1, 'paid'],
      [2, 'placed'],
      [4, 'placed'],
    ]);
    expect(view.state.delivery).toMatchObject({
      key: '2025/03/02/full-1.csv',
      partition: '2025-03-02',
    });

    // An extract that lands late in an older partition is an older extract, though its file is
    // the newest: superseded, it deletes nothing (it lacks keys 2 and 4).
    await land(source, session, '2025/03/01/full-2.csv', orders([1, 'placed', 1]));
    const late = await run(config);
    expect(late).toMatchObject({ status: 'succeeded', filesLoaded: 0, deleted: 0 });
    expect(late.skippedByReason?.['superseded by a newer delivery']).toBe(1);
    expect(statuses((await readTarget(session, config)).rows)).toEqual([
      [1, 'paid'],
      [2, 'placed'],
      [4, 'placed'],
    ]);
  });

  it("a crash before the extract's commit leaves the table; the rerun deletes as one run would (fault injection through a hook)", async () => {
    for (const point of ['afterWrite', 'beforeCommit'] as const) {
      const { source, config } = await setup();
      const day1 = orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1]);
      await land(source, session, '2025/03/01/part-0.csv', day1);
      await run(config);
      const day2 = orders([1, 'paid', 2], [2, 'placed', 1]);
      await land(source, session, '2025/03/02/part-0.csv', day2);
      const crashed = await runOutcome(config, {
        hooks: {
          [point]: () => {
            throw new Error(`crash at ${point}`);
          },
        },
      });
      expect(crashed.ok).toBe(false);
      let view = await readTarget(session, config);
      expect(view.snapshot?.version).toBe(0);
      expect(ids(view.rows)).toEqual([1, 2, 3]);
      expect(await run(config)).toMatchObject({
        status: 'succeeded',
        commits: 1,
        deleted: 1,
        inserted: 0,
      });
      view = await readTarget(session, config);
      expect(view.rows).toEqual(expectedLatest(day2));
      expect((await checkTarget(session, config)).problems).toEqual([]);
    }
  });

  it('refuses settings that do not apply', () => {
    const bad =
      (
        source: Record<string, unknown>,
        target: Record<string, unknown> = { mode: 'merge', key: ['order_id'], orderBy: 'seq' },
      ) =>
      () =>
        makeConfig({
          source: {
            uri: '/tmp/src',
            discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
            ...source,
          },
          target: { uri: '/tmp/dst', ...target },
        });
    expect(bad({ snapshot: true }, { mode: 'append' })).toThrow(
      /source\.snapshot.*applies only when target\.mode is merge or scd2 \(it is append\)/s,
    );
    expect(bad({ snapshotPattern: 'full-*' })).toThrow(
      /source\.snapshotPattern.*applies only with snapshot: true/s,
    );
    expect(bad({ snapshot: true, maxDeleteShare: 1.5 })).toThrow(/source\.maxDeleteShare/);
  });
});
