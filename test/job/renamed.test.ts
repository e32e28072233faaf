/**
 * A renamed job (issue 20, item 3), through the real job: local folders, real DuckDB, real Delta
 * logs. A job without state in a table holding the state of another job of the same source is
 * refused (exit 2) naming it; `--adopt-state-of OLD` carries the state over (watermark, remembered
 * files, tombstones, ledger, and the backfill states with theirs), `--fresh` starts anew; jobs of other sources share a table without a word.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { validateJobs } from '../../src/job/validate.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { reportOf } from '../cli/preflight-helpers.js';
import { cli } from '../helpers/cli.js';
import { openTarget } from '../../src/job/open.js';
import { readBackfillState, readBackfillStates } from '../../src/job/backfill/state.js';
import { openTable } from '../../scripts/lib/tables.js';
import { backfill } from './backfill-helpers.js';
import {
  DuckSession,
  duplicateRids,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

/** A job named `name` over `src` into `table`. */
function jobNamed(
  name: string,
  src: string,
  table: string,
  target: Record<string, unknown> = { mode: 'append' },
): ReturnType<typeof makeConfig> {
  const setup = makeConfig({
    source: { uri: src, discover: byDay },
    target: { uri: table, ...target },
  });
  return { ...setup, job: { ...setup.job, name } };
}

async function zone(): Promise<{ dir: string; storage: LocalStorage }> {
  const dir = await tempDir('src', dirs);
  return { dir, storage: new LocalStorage(dir) };
}

describe('a renamed job', () => {
  it('append: refused naming the old job, where it would have appended every row again; --adopt-state-of carries the state over', async () => {
    const src = await zone();
    const table = await tempDir('t', dirs);
    await land(src.storage, session, '2026/11/30/a.csv', orders([1, 'a', 1], [2, 'b', 1]));
    await land(src.storage, session, '2026/12/01/b.csv', orders([3, 'c', 1]));
    const old = jobNamed('orders', src.dir, table);
    expect(await run(old)).toMatchObject({ inserted: 3 });

    const renamed = jobNamed('orders_v2', src.dir, table);
    const outcome = await runOutcome(renamed);
    const err = outcome.ok ? null : outcome.error;
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).context).toMatchObject({
      field: 'name',
      job: 'orders_v2',
      sameSource: ['orders'],
    });
    expect((err as ConfigError).message).toMatch(
      /holds the state of job orders \(watermark 2026-12-01\), which loaded the same source .*--adopt-state-of orders.*--fresh.*every row a second time/,
    );
    expect((await readTarget(session, renamed)).rows).toHaveLength(3);

    const adopted = await run(renamed, { adoptStateOf: 'orders' });
    expect(adopted).toMatchObject({
      status: 'succeeded',
      adoptedStateOf: 'orders',
      commits: 1,
      filesLoaded: 0,
      watermark: '2026-12-01',
    });
    const view = await readTarget(session, renamed);
    expect(view.rows).toHaveLength(3);
    expect(view.state).toMatchObject({
      job: 'orders_v2',
      totals: { filesLoaded: 2 },
      discovery: { watermark: '2026-12-01' },
    });
    expect(view.snapshot!.domains.has('tidemark.job.orders')).toBe(false);

    // From here the new name goes on where the old one stopped; the flag may stay set.
    await land(src.storage, session, '2026/12/01/c.csv', orders([4, 'd', 1]));
    expect(await run(renamed, { adoptStateOf: 'orders' })).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 1,
      commits: 1,
    });
    expect(await run(renamed)).toMatchObject({ status: 'nothing-new' });
    const rows = (await readTarget(session, renamed)).rows;
    expect(rows).toHaveLength(4);
    expect(duplicateRids(rows)).toEqual([]);
    // The old name, still configured somewhere, is refused the same way.
    const back = await runOutcome(old);
    expect(back.ok ? null : (back.error as ConfigError).context).toMatchObject({
      sameSource: ['orders_v2'],
    });
  });

  it('append: a job that only backfilled (no state of its own), then renamed: the new name does not append the backfilled files again', async () => {
    const src = await zone();
    const table = await tempDir('t', dirs);
    await land(src.storage, session, '2026/11/30/a.csv', orders([1, 'a', 1], [2, 'b', 1]));
    const old = jobNamed('orders', src.dir, table);
    expect(await backfill(old, { from: '2026-11-30', to: '2026-11-30' })).toMatchObject({
      inserted: 2,
    });
    // Nothing to adopt (no job state under the old name): the new name's first run looks the backfilled files up.
    const renamed = jobNamed('orders_v2', src.dir, table);
    await land(src.storage, session, '2026/12/01/b.csv', orders([3, 'c', 1]));
    expect(await run(renamed)).toMatchObject({
      status: 'succeeded',
      inserted: 1,
      filesAlreadyLoaded: 1,
    });
    const rows = (await readTarget(session, renamed)).rows;
    expect(rows.map((r) => r.order_id).sort()).toEqual([1, 2, 3]);
    expect(duplicateRids(rows)).toEqual([]);
  });

  it('merge: the tombstones move with the state (copied into the new job folder), so a deleted key stays deleted', async () => {
    const src = await zone();
    const table = await tempDir('t', dirs);
    const merge = {
      mode: 'merge',
      key: ['order_id'],
      orderBy: 'seq',
      deleteWhen: "status = 'deleted'",
    };
    await land(
      src.storage,
      session,
      '2026/12/01/a.csv',
      orders([1, 'placed', 1], [2, 'placed', 1]),
    );
    await land(src.storage, session, '2026/12/01/b.csv', orders([1, 'deleted', 5]));
    expect(await run(jobNamed('orders', src.dir, table, merge))).toMatchObject({
      deleted: 0,
      inserted: 1,
    });
    expect(
      (await readTarget(session, jobNamed('orders', src.dir, table, merge))).state.tombstones
        ?.files,
    ).toHaveLength(1);

    const renamed = jobNamed('orders_v2', src.dir, table, merge);
    expect(await run(renamed, { adoptStateOf: 'orders' })).toMatchObject({
      adoptedStateOf: 'orders',
    });
    const state = (await readTarget(session, renamed)).state;
    expect(state.tombstones?.files).toEqual([
      expect.objectContaining({
        path: expect.stringMatching(/^_tidemark\/tombstones\/orders_v2\/[0-9a-f-]{36}\.parquet$/),
        rows: 1,
      }),
    ]);
    expect(await readdir(join(table, '_tidemark/tombstones/orders_v2'))).toHaveLength(1);

    await land(src.storage, session, '2026/12/01/late.csv', orders([1, 'late', 3]));
    expect(await run(renamed)).toMatchObject({ status: 'succeeded', inserted: 0, skippedStale: 1 });
    expect((await readTarget(session, renamed)).rows.map((r) => r.order_id)).toEqual([2]);
  });

  it('merge: the backfill states move too (tombstones and ledgers copied), so a key a backfill of the old name deleted stays deleted', async () => {
    const src = await zone();
    const table = await tempDir('t', dirs);
    const merge = {
      mode: 'merge',
      key: ['order_id'],
      orderBy: 'seq',
      deleteWhen: "status = 'deleted'",
    };
    await land(
      src.storage,
      session,
      '2026/12/01/a.csv',
      orders([1, 'placed', 1], [2, 'placed', 1]),
    );
    expect(await run(jobNamed('orders', src.dir, table, merge))).toMatchObject({ inserted: 2 });
    // A delete in a partition behind the lookback: only a backfill loads it, and its tombstone is the backfill's.
    await land(src.storage, session, '2026/11/20/del.csv', orders([1, 'deleted', 5]));
    expect(
      await backfill(jobNamed('orders', src.dir, table, merge), {
        from: '2026-11-20',
        to: '2026-11-20',
      }),
    ).toMatchObject({ status: 'succeeded', deleted: 1 });

    const renamed = jobNamed('orders_v2', src.dir, table, merge);
    expect(await run(renamed, { adoptStateOf: 'orders' })).toMatchObject({
      adoptedStateOf: 'orders',
    });
    const snapshot = await openTable(openTarget(renamed.job, renamed.storage), session).snapshot();
    expect(readBackfillStates(snapshot, 'orders').size).toBe(0);
    const adopted = readBackfillState(snapshot, 'orders_v2');
    expect(adopted).toMatchObject({ job: 'orders_v2', status: 'done', from: '2026-11-20' });
    expect(adopted?.tombstones?.files).toEqual([
      expect.objectContaining({
        path: expect.stringMatching(
          /^_tidemark\/tombstones\/orders_v2@backfill\/[0-9a-f-]{36}\.parquet$/,
        ),
        rows: 1,
      }),
    ]);
    expect(adopted?.ledger?.files).toEqual([
      expect.objectContaining({
        path: expect.stringMatching(/^_tidemark\/ledger\/orders_v2\/[0-9a-f-]{36}\.parquet$/),
        rows: 1,
      }),
    ]);

    // A late row older than the delete: buried by the adopted backfill tombstone, in a run and in a backfill.
    await land(src.storage, session, '2026/12/01/late.csv', orders([1, 'late', 3]));
    expect(await run(renamed)).toMatchObject({ status: 'succeeded', inserted: 0, skippedStale: 1 });
    await land(src.storage, session, '2026/11/20/late.csv', orders([1, 'late', 4]));
    expect(
      await backfill(renamed, { from: '2026-11-20', to: '2026-11-20', restart: true }),
    ).toMatchObject({ status: 'succeeded', inserted: 0 });
    expect((await readTarget(session, renamed)).rows.map((r) => r.order_id)).toEqual([2]);
  });

  it('--fresh: another job of the same source starts anew, once; jobs of other sources share a table without a word', async () => {
    const src = await zone();
    const table = await tempDir('t', dirs);
    const merge = { mode: 'merge', key: ['order_id'], orderBy: 'seq' };
    await land(src.storage, session, '2026/12/01/a.csv', orders([1, 'a', 1]));
    await run(jobNamed('orders', src.dir, table, merge));
    const second = jobNamed('orders_copy', src.dir, table, merge);
    expect((await runOutcome(second)).ok).toBe(false);
    expect(await run(second, { fresh: true })).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      unchanged: 1,
    });
    await land(src.storage, session, '2026/12/01/b.csv', orders([2, 'b', 1]));
    expect(await run(second)).toMatchObject({ status: 'succeeded', filesLoaded: 1, inserted: 1 });

    const other = await zone();
    await land(other.storage, session, '2026/12/01/x.csv', orders([7, 'x', 1]));
    expect(await run(jobNamed('returns', other.dir, table, merge))).toMatchObject({
      status: 'succeeded',
      inserted: 1,
    });
    expect(await run(jobNamed('orders', src.dir, table, merge))).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      unchanged: 1,
    });
  });

  it('the CLI: exit 2 naming the old job, validate lists it, --adopt-state-of needs one --job', async () => {
    const src = await zone();
    const table = await tempDir('t', dirs);
    await land(src.storage, session, '2026/12/01/a.csv', orders([1, 'a', 1]));
    await run(jobNamed('orders', src.dir, table));
    const file = join(await tempDir('cfg', dirs), 'tidemark.yaml');
    await writeFile(
      file,
      JSON.stringify({
        jobs: [
          {
            name: 'orders_v2',
            source: { uri: src.dir, discover: byDay },
            target: { uri: table, mode: 'append' },
          },
        ],
      }),
    );
    const ctx = { logger: silentLogger(), tty: false };
    const refused = await cli(['run', '--config', file, '--json'], ctx);
    expect(refused.code).toBe(2);
    expect(reportOf(refused).error).toMatchObject({
      type: 'ConfigError',
      context: { field: 'name', sameSource: ['orders'] },
    });
    const [checked] = await validateJobs({ file }, { logger: silentLogger() });
    expect(checked!.problems).toEqual([
      expect.objectContaining({
        field: 'jobs[0].name',
        message: expect.stringMatching(/--adopt-state-of orders/),
        kind: 'usage',
      }),
    ]);
    expect((await cli(['run', '--config', file, '--adopt-state-of', 'orders'], ctx)).code).toBe(2);
    const adopted = await cli(
      ['run', '--config', file, '--job', 'orders_v2', '--adopt-state-of', 'orders', '--json'],
      ctx,
    );
    expect(adopted.code).toBe(0);
    expect(reportOf(adopted)).toMatchObject({ adoptedStateOf: 'orders', filesLoaded: 0 });
    expect((await readTarget(session, jobNamed('orders_v2', src.dir, table))).rows).toHaveLength(1);
  });
});
