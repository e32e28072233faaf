/**
 * Replace mode end to end (docs/concepts.md, Replace): a local landing zone of daily full extracts
 * (partition discovery) and a local target. Each run makes the newest delivery the whole table in
 * one commit: older deliveries found with it are superseded (never loaded, the watermark passes
 * them), a late file of an older or the applied partition never rolls the table back, a key keeps
 * the latest row per key, an empty delivery empties the table, the change feed records every
 * stored row as a delete and every new row as an insert, and `history` shows each replacement. A
 * crash (an exception thrown from a RunContext hook: fault injection standing in for a process
 * dying there) before the commit leaves the previous table intact, and the rerun completes it.
 */
import { describe, expect, it } from 'vitest';
import { commitKey } from '../../src/delta/log-files.js';
import { ConfigError } from '../../src/errors.js';
import { readHistory } from '../../src/job/history.js';
import { openTarget } from '../../src/job/open.js';
import { runBackfill } from '../../src/job/backfill/run.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { changeRows, commitActions } from '../helpers/change-data.js';
import {
  checkTarget,
  DuckSession,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  sortRows,
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

/** A fresh landing zone and target; `target` settings over replace mode. */
async function setup(target: Record<string, unknown> = {}, job: Record<string, unknown> = {}) {
  const src = await tempDir('replace-src', dirs);
  const dst = await tempDir('replace-dst', dirs);
  const config = makeConfig({
    source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 3 } },
    target: { uri: dst, mode: 'replace', ...target },
    ...job,
  });
  return { source: new LocalStorage(src), config };
}

const ofRows = (...sets: OrderRow[][]) => sortRows(sets.flat());

describe('replace mode', () => {
  it('makes the newest delivery the table, superseding older ones and late files, one commit per run', async () => {
    const { source, config } = await setup({}, { maxFilesPerBatch: 1 });
    const day1 = orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1]);
    await land(source, session, '2025/03/01/part-0.csv', day1);
    const first = await run(config);
    expect(first).toMatchObject({ status: 'succeeded', commits: 1, inserted: 3, tableVersion: 0 });
    expect((await readTarget(session, config)).rows).toEqual(ofRows(day1));

    // Two deliveries found at once, the newer in two part files (more than maxFilesPerBatch): only it loads, in one commit.
    const day2 = orders([2, 'paid', 2], [4, 'placed', 1]);
    const day3a = orders([1, 'shipped', 3], [5, 'placed', 1]);
    const day3b = orders([6, 'placed', 1]);
    await land(source, session, '2025/03/02/part-0.csv', day2);
    await land(source, session, '2025/03/03/part-0.csv', day3a);
    await land(source, session, '2025/03/03/part-1.parquet', day3b);
    const second = await run(config);
    expect(second).toMatchObject({
      status: 'succeeded',
      commits: 1,
      filesLoaded: 2,
      inserted: 3,
      deleted: 3,
      dataFilesRemoved: 1,
      tableVersion: 1,
      watermark: '2025-03-03',
    });
    expect(second.skippedByReason?.['superseded by a newer delivery']).toBe(1);
    let view = await readTarget(session, config);
    expect(view.rows).toEqual(ofRows(day3a, day3b));
    expect(view.state.delivery).toEqual({ partition: '2025-03-03' });

    // Late files, of an older partition and of the one applied: passed over, the table unchanged.
    await land(source, session, '2025/03/02/part-1.csv', orders([7, 'placed', 9]));
    await land(source, session, '2025/03/03/part-2.csv', orders([8, 'placed', 9]));
    const late = await run(config);
    expect(late).toMatchObject({
      status: 'succeeded',
      commits: 1,
      filesLoaded: 0,
      inserted: 0,
      tableVersion: 2,
    });
    expect(late.skippedByReason?.['superseded by a newer delivery']).toBe(2);
    view = await readTarget(session, config);
    expect(view.rows).toEqual(ofRows(day3a, day3b));
    // …and not listed again.
    expect(await run(config)).toMatchObject({ status: 'nothing-new', commits: 0 });

    // Without a key every row of the delivery is kept, duplicates of a key too.
    const day4 = orders([1, 'a', 1], [1, 'b', 2]);
    await land(source, session, '2025/03/04/part-0.csv', day4);
    await run(config);
    expect((await readTarget(session, config)).rows).toEqual(ofRows(day4));

    const history = await readHistory(openTarget(config.job, config.storage), {
      limit: 10,
      job: 'orders',
    });
    expect(history.entries.map((e) => e.operation)).toEqual([
      'WRITE',
      'SET TRANSACTION',
      'WRITE',
      'CREATE TABLE AS SELECT',
    ]);
    const overwrite = (await commitActions(openTarget(config.job, config.storage), 3)).find(
      (a) => 'commitInfo' in a,
    );
    expect(overwrite).toMatchObject({
      commitInfo: { operation: 'WRITE', operationParameters: { mode: 'Overwrite' } },
    });
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('keeps the latest row per key when a key is set; an empty delivery empties the table', async () => {
    const { source, config } = await setup({ key: ['order_id'], orderBy: 'seq' });
    const day1 = orders([1, 'placed', 1], [1, 'paid', 2], [2, 'placed', 1]);
    await land(source, session, '2025/03/01/part-0.csv', day1);
    await run(config);
    expect((await readTarget(session, config)).rows).toEqual(ofRows([day1[1]!, day1[2]!]));
    await source.write('2025/03/02/part-0.csv', 'order_id,status,seq,rid\n');
    expect(await run(config)).toMatchObject({
      status: 'succeeded',
      commits: 1,
      inserted: 0,
      deleted: 2,
    });
    expect((await readTarget(session, config)).rows).toEqual([]);
    const day3 = orders([3, 'placed', 1]);
    await land(source, session, '2025/03/03/part-0.csv', day3);
    await run(config);
    expect((await readTarget(session, config)).rows).toEqual(ofRows(day3));
  });

  it('counts the rows it removes from files written without statistics (another tool may leave numRecords out)', async () => {
    const { source, config } = await setup();
    await land(
      source,
      session,
      '2025/03/01/part-0.csv',
      orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1]),
    );
    await run(config);
    // The table as a writer that records no stats leaves it: the add actions of version 0 without `stats`.
    const table = new LocalStorage(config.job.target.uri);
    const log = Buffer.from((await table.read(commitKey(0)))!).toString('utf8');
    const stripped = log.split('\n').map((line) => {
      if (!line.includes('"add"')) return line;
      const action = JSON.parse(line) as { add: Record<string, unknown> };
      delete action.add['stats'];
      return JSON.stringify(action);
    });
    expect(stripped.join('\n')).not.toContain('numRecords');
    await table.write(commitKey(0), stripped.join('\n'));
    await land(source, session, '2025/03/02/part-0.csv', orders([4, 'placed', 1]));
    expect(await run(config)).toMatchObject({
      status: 'succeeded',
      inserted: 1,
      deleted: 3,
      dataFilesRemoved: 1,
    });
    const info = (await commitActions(table, 1)).flatMap((a) =>
      'commitInfo' in a ? [a.commitInfo] : [],
    );
    expect(info[0]?.operationMetrics).toMatchObject({ numDeletedRows: '3', numOutputRows: '1' });
  });

  it('records the change feed: every stored row a delete, every new row an insert', async () => {
    const { source, config } = await setup({
      changeDataFeed: true,
      key: ['order_id'],
      orderBy: 'seq',
    });
    await land(
      source,
      session,
      '2025/03/01/part-0.csv',
      orders([1, 'placed', 1], [2, 'placed', 1]),
    );
    await run(config);
    await land(source, session, '2025/03/02/part-0.csv', orders([2, 'paid', 2], [3, 'placed', 1]));
    await run(config);
    const feed = await changeRows(
      session,
      openTarget(config.job, config.storage),
      1,
      '_change_type, order_id',
    );
    expect(feed.map((r) => [r['_change_type'], Number(r['order_id']), r['status']])).toEqual([
      ['delete', 1, 'placed'],
      ['delete', 2, 'placed'],
      ['insert', 2, 'paid'],
      ['insert', 3, 'placed'],
    ]);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('a crash before the commit leaves the previous table; the rerun replaces it (fault injection through a hook)', async () => {
    for (const point of ['afterWrite', 'beforeCommit'] as const) {
      const { source, config } = await setup();
      const day1 = orders([1, 'placed', 1], [2, 'placed', 1]);
      await land(source, session, '2025/03/01/part-0.csv', day1);
      await run(config);
      const day2 = orders([3, 'placed', 1]);
      await land(source, session, '2025/03/02/part-0.csv', day2);
      const crashed = await runOutcome(config, {
        hooks: {
          [point]: () => {
            throw new Error(`crash at ${point}`);
          },
        },
      });
      expect(crashed.ok).toBe(false);
      const after = await readTarget(session, config);
      expect(after.rows).toEqual(ofRows(day1));
      expect(after.snapshot?.version).toBe(0);
      expect(await run(config)).toMatchObject({
        status: 'succeeded',
        commits: 1,
        inserted: 1,
        deleted: 2,
      });
      expect((await readTarget(session, config)).rows).toEqual(ofRows(day2));
      expect((await checkTarget(session, config)).problems).toEqual([]);
    }
  });

  it('refuses settings that do not apply, and a backfill', async () => {
    const dst = '/tmp/none';
    const bad = (target: Record<string, unknown>) => () =>
      makeConfig({
        source: { uri: '/tmp/src', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: { uri: dst, mode: 'replace', ...target },
      });
    expect(bad({ key: ['order_id'] })).toThrow(
      /target\.orderBy.*required when mode is replace with a key/s,
    );
    expect(bad({ orderBy: 'seq' })).toThrow(
      /target\.key.*required when mode is replace with an orderBy/s,
    );
    expect(bad({ deleteWhen: 'is_deleted' })).toThrow(
      /target\.deleteWhen.*does not apply when mode is replace/s,
    );
    const { config } = await setup();
    const outcome = await runBackfill(
      config.job,
      { storage: config.storage, logger: silentLogger(), tty: false },
      { from: '2025-03-01', to: '2025-03-02' },
    );
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.error).toBeInstanceOf(ConfigError);
  });
});
