/**
 * The job remembers what it was configured with (issue 20, item 2), through the real job: sources
 * in local folders, real DuckDB, real Delta logs. Each case is a config edited between two runs:
 *   - a wider settle in modification-time mode keeps the files already loaded;
 *   - a new orderBy (or a key the tombstones do not hold) is refused while deletes are remembered,
 *     until --accept-config-change or a reset; a narrower key re-keys the tombstones;
 *   - a narrower key, or append -> merge, is refused while the table holds several rows per new key.
 */
import { cp, mkdir, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { resetJob } from '../../src/job/reset.js';
import { validateJobs, type ValidateReport } from '../../src/job/validate.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { readTable } from '../../src/engine/scan.js';
import { openTarget } from '../../src/job/open.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';
import { backfill, backfillOutcome } from './backfill-helpers.js';
import { cli } from '../helpers/cli.js';
import { reportOf } from '../cli/preflight-helpers.js';
import {
  DuckSession,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
  unwrap,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

type Setup = ReturnType<typeof makeConfig>;

/** Every row of the job's table, sorted by `by`, with the named columns only. */
async function rowsOf(setup: Setup, columns: string[]): Promise<Array<Record<string, unknown>>> {
  const storage = openTarget(setup.job, setup.storage);
  const snapshot = await openTable(storage, session).snapshot();
  if (!snapshot) return [];
  const rows = await readTable(session, scanSource(storage), snapshot);
  const pick = (r: Record<string, unknown>) =>
    Object.fromEntries(columns.map((c) => [c, typeof r[c] === 'bigint' ? Number(r[c]) : r[c]]));
  return rows.map(pick).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/** A config file holding the one job `job` (as makeConfig takes it). */
async function configFile(job: Record<string, unknown>): Promise<string> {
  const file = join(await tempDir('cfg', dirs), 'tidemark.yaml');
  await writeFile(file, JSON.stringify({ jobs: [{ name: 'orders', ...job }] }));
  return file;
}

/** `tidemark validate` of a config holding the one job `job`. */
async function validate(job: Record<string, unknown>): Promise<ValidateReport> {
  const [report] = await validateJobs({ file: await configFile(job) }, { logger: silentLogger() });
  return report!;
}

/** `tidemark run --json` in process: its exit code and report. */
async function cliRun(
  file: string,
  ...flags: string[]
): Promise<{ code: number; report: ReturnType<typeof reportOf> }> {
  const r = await cli(['run', '--config', file, '--json', ...flags], {
    logger: silentLogger(),
    tty: false,
  });
  return { code: r.code, report: reportOf(r) };
}

/** Run and expect a refusal: the ConfigError (exit 2) thrown. */
async function refused(
  setup: Setup,
  extra: Parameters<typeof runOutcome>[1] = {},
): Promise<ConfigError> {
  const outcome = await runOutcome(setup, extra);
  if (outcome.ok) throw new Error(`expected a refusal, the run ended ${outcome.report.status}`);
  expect(outcome.error).toBeInstanceOf(ConfigError);
  return outcome.error as ConfigError;
}

describe('modification-time mode: a wider settle', () => {
  it('settle 1m -> 1h: the files loaded 30, 20 and 10 minutes ago are not loaded again (4 rows stay 4)', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const narrow = makeConfig({
      source: { uri: dir, discover: { by: 'modified', settle: '1m' } },
      target,
    });
    for (const age of [30, 20, 10, 0]) {
      await land(src, session, `feed/m${age}.csv`, orders([age, `m${age}`, 1]));
      const at = new Date(Date.now() - age * 60_000 - 5_000);
      await utimes(join(dir, `feed/m${age}.csv`), at, at);
    }
    expect(await run(narrow)).toMatchObject({ status: 'succeeded', inserted: 4 });

    const wideJob = { source: { uri: dir, discover: { by: 'modified', settle: '1h' } }, target };
    expect(await validate(wideJob)).toMatchObject({
      status: 'ok',
      warnings: [
        expect.objectContaining({
          field: 'jobs[0].source.discover.settle',
          message: expect.stringMatching(
            /^source.discover.settle changed from 1m to 1h: .*none is loaded twice/,
          ),
        }),
      ],
    });
    const wide = makeConfig(wideJob);
    const second = await run(wide);
    expect(second).toMatchObject({ status: 'nothing-new', inserted: 0 });
    expect(second.configChanges).toEqual([
      expect.objectContaining({
        field: 'source.discover.settle',
        from: '1m',
        to: '1h',
        effect: expect.stringMatching(/files loaded before are kept, none is loaded twice/),
      }),
    ]);
    expect((await readTarget(session, wide)).rows).toHaveLength(4);

    // A file landing late within the wider window still loads, once.
    await land(src, session, 'feed/late.csv', orders([99, 'late', 1]));
    expect(await run(wide)).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await run(wide)).toMatchObject({ status: 'nothing-new' });
    const table = await readTarget(session, wide);
    expect(table.rows).toHaveLength(5);
    expect(table.state.configuredAs?.discover).toEqual({ by: 'modified', settleMs: 3_600_000 });
  });
});

describe('source filters edited', () => {
  it('include widened: the watermark carries over, a newly selected file behind it is not loaded (said, with the backfill that loads it), one after it is', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const discover = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 0, lateCheck: 0 };
    const csvOnly = makeConfig({ source: { uri: dir, include: ['*.csv'], discover }, target });
    await land(src, session, '2026/11/28/a.csv', orders([1, 'a', 1]));
    await land(src, session, '2026/11/28/b.ndjson', orders([2, 'b', 1]));
    await land(src, session, '2026/11/29/c.csv', orders([3, 'c', 1]));
    expect(await run(csvOnly)).toMatchObject({
      status: 'succeeded',
      inserted: 2,
      watermark: '2026-11-29',
    });

    const widerJob = { source: { uri: dir, include: ['*.csv', '*.ndjson'], discover }, target };
    expect((await validate(widerJob)).warnings).toEqual([
      expect.objectContaining({
        field: 'jobs[0].source.include',
        message: expect.stringMatching(
          /^source.include changed from \[\*.csv\] to \[\*.csv, \*.ndjson\]: files it newly selects behind the watermark \(2026-11-29\) are not loaded \(backfill them\)/,
        ),
      }),
    ]);
    const wider = makeConfig(widerJob);
    await land(src, session, '2026/11/30/d.ndjson', orders([4, 'd', 1]));
    const second = await run(wider);
    expect(second).toMatchObject({ status: 'succeeded', filesLoaded: 1, inserted: 1 });
    expect(second.configChanges).toEqual([
      expect.objectContaining({
        field: 'source.include',
        effect: expect.stringMatching(/not loaded \(backfill them\)/),
      }),
    ]);
    expect((await readTarget(session, wider)).rows.map((r) => r.order_id).sort()).toEqual([
      1, 3, 4,
    ]);
    // The backfill the change names loads b.ndjson, once; a.csv is already there.
    expect(await backfill(wider, { from: '2026-11-28', to: '2026-11-28' })).toMatchObject({
      status: 'succeeded',
      inserted: 1,
    });
    expect((await readTarget(session, wider)).rows.map((r) => r.order_id).sort()).toEqual([
      1, 2, 3, 4,
    ]);
  });
});

describe('source.uri edited', () => {
  // Found by an operator's bug hunt: ./land -> ./land/sub appended land/sub/a.csv a second time,
  // its key remembered as `sub/a.csv` and listed as `a.csv`.
  it('narrowed to a folder of the old source, then widened back: the remembered files carry over, nothing is appended twice, also after a crash between batches', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const discover = { by: 'modified', settle: '15m' };
    const at = (uri: string, extra: Record<string, unknown> = {}) =>
      makeConfig({ source: { uri, discover }, target, ...extra });
    await land(src, session, 'sub/a.csv', orders([1, 'a', 1]));
    await land(src, session, 'b.csv', orders([2, 'b', 1]));
    expect(await run(at(dir))).toMatchObject({ status: 'succeeded', inserted: 2 });

    const narrow = at(join(dir, 'sub'), { maxFilesPerBatch: 1 });
    await land(src, session, 'sub/c.csv', orders([3, 'c', 1]));
    await land(src, session, 'sub/d.csv', orders([4, 'd', 1]));
    // The first batch (c.csv) commits, the second fails: a crash between them.
    const crashed = await runOutcome(narrow, {
      onFilesCommitted: () => {
        throw new Error('killed after the first commit');
      },
    });
    expect(crashed.ok).toBe(false);
    expect((await rowsOf(narrow, ['order_id'])).map((r) => r.order_id)).toEqual([1, 2, 3]);
    const rerun = await run(narrow);
    expect(rerun).toMatchObject({ status: 'succeeded', filesLoaded: 1, inserted: 1 });
    expect(await run(narrow)).toMatchObject({ status: 'nothing-new' });
    expect((await rowsOf(narrow, ['order_id'])).map((r) => r.order_id)).toEqual([1, 2, 3, 4]);

    expect(await run(at(dir))).toMatchObject({ status: 'nothing-new' });
    expect((await rowsOf(narrow, ['order_id'])).map((r) => r.order_id)).toEqual([1, 2, 3, 4]);
  });

  // Found by the config-change hunt: the table holds the files loaded from the old folder under
  // their old _source_file, so an append replacing a file's earlier rows found none after the
  // move, and the rewritten file's rows were appended beside its first version's.
  it('moved to a copy in another folder, then narrowed: a file rewritten there replaces the rows it was first loaded with', async () => {
    const [old, copy] = [await tempDir('src', dirs), await tempDir('copy', dirs)];
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const at = (uri: string) =>
      makeConfig({ source: { uri, discover: { by: 'modified', settle: '15m' } }, target });
    const statuses = async () =>
      (await rowsOf(at(copy), ['order_id', 'status'])).map((r) => `${r.order_id} ${r.status}`);
    await land(new LocalStorage(old), session, 'sub/a.csv', orders([1, 'a1', 1], [2, 'b1', 1]));
    await land(new LocalStorage(old), session, 'sub/b.csv', orders([5, 'e1', 1]));
    expect(await run(at(old))).toMatchObject({ status: 'succeeded', inserted: 3 });

    // The same files copied (new times): nothing loads again.
    await cp(join(old, 'sub'), join(copy, 'sub'), { recursive: true });
    expect(await run(at(copy))).toMatchObject({ inserted: 0 });
    const src = new LocalStorage(copy);
    await land(src, session, 'sub/a.csv', orders([1, 'a2', 2], [2, 'b2', 2], [3, 'c2', 2]));
    expect(await run(at(copy))).toMatchObject({ filesReplaced: 1, rowsReplaced: 2, inserted: 3 });
    expect(await statuses()).toEqual(['1 a2', '2 b2', '3 c2', '5 e1']);

    // Narrowed to sub/: b.csv, still held under the first folder's name, is found there.
    await land(src, session, 'sub/b.csv', orders([5, 'e3', 3]));
    expect(await run(at(join(copy, 'sub')))).toMatchObject({ filesReplaced: 1, inserted: 1 });
    expect(await statuses()).toEqual(['1 a2', '2 b2', '3 c2', '5 e3']);
  });

  it('moved to a copy in another folder: a backfill of the range loaded before the move appends nothing again, whether or not a run committed since', async () => {
    const [old, copy] = [await tempDir('src', dirs), await tempDir('copy', dirs)];
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const discover = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 };
    const at = (uri: string) => makeConfig({ source: { uri, discover }, target });
    await land(new LocalStorage(old), session, '2026/12/01/a.csv', orders([1, 'a', 1]));
    await land(new LocalStorage(old), session, '2026/12/02/b.csv', orders([2, 'b', 1]));
    expect(await run(at(old))).toMatchObject({ status: 'succeeded', inserted: 2 });
    await cp(join(old, '2026'), join(copy, '2026'), { recursive: true });
    const ids = async () => (await rowsOf(at(copy), ['order_id'])).map((r) => r.order_id);
    // No run under the new source yet: the state still records the old one.
    const range = { from: '2026-12-01', to: '2026-12-02' };
    expect(await backfill(at(copy), range)).toMatchObject({ filesLoaded: 2, inserted: 0 });
    expect(await ids()).toEqual([1, 2]);
    await land(new LocalStorage(copy), session, '2026/12/03/c.csv', orders([3, 'c', 1]));
    expect(await run(at(copy))).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(await backfill(at(copy), { ...range, restart: true })).toMatchObject({ inserted: 0 });
    expect(await ids()).toEqual([1, 2, 3]);
  });
});

/** A merge feed of `order_id,region,status,seq,seq2,deleted` rows in one partition folder. */
function cdcFeed(dir: string) {
  const src = new LocalStorage(dir);
  let n = 0;
  return (rows: Array<[number, string, string, number, number, boolean]>) =>
    src.write(
      `2026/12/01/f${String(++n).padStart(3, '0')}.csv`,
      ['order_id,region,status,seq,seq2,deleted', ...rows.map((r) => r.join(','))].join('\n') +
        '\n',
    );
}

function mergeSetup(src: string, tableUri: string, target: Record<string, unknown>): Setup {
  return makeConfig({
    source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 } },
    target: {
      uri: tableUri,
      mode: 'merge',
      key: ['order_id'],
      orderBy: 'seq',
      deleteWhen: 'deleted',
      ...target,
    },
  });
}

/** The same source into a table written without a key: appended to, or replaced by each delivery. */
function keylessSetup(src: string, tableUri: string, mode: 'append' | 'replace'): Setup {
  return makeConfig({
    source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 } },
    target: { uri: tableUri, mode },
  });
}

describe('layout edited', () => {
  // Found by the config-change hunt: the remembered files kept their old folders' keys, so the
  // lookback partitions' files moved into the new layout were loaded again (3 rows became 6).
  it('{yyyy}/{mm}/{dd} -> dt={yyyy}-{mm}-{dd} with the files moved: none loads again, and one rewritten there replaces its earlier rows', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const at = (layout: string) =>
      makeConfig({
        source: { uri: dir, discover: { by: 'partition', layout, lookback: 2 } },
        target,
      });
    await land(src, session, '2026/12/01/a.csv', orders([1, 'a1', 1], [2, 'b1', 1]));
    await land(src, session, '2026/12/02/b.csv', orders([3, 'c1', 1]));
    expect(await run(at('{yyyy}/{mm}/{dd}'))).toMatchObject({ inserted: 3 });
    for (const d of ['01', '02']) {
      await mkdir(join(dir, `dt=2026-12-${d}`));
      const name = d === '01' ? 'a.csv' : 'b.csv';
      await rename(join(dir, `2026/12/${d}/${name}`), join(dir, `dt=2026-12-${d}/${name}`));
    }
    await rm(join(dir, '2026'), { recursive: true });
    const moved = at('dt={yyyy}-{mm}-{dd}');
    expect(await run(moved)).toMatchObject({ status: 'nothing-new', inserted: 0 });
    await land(src, session, 'dt=2026-12-02/b.csv', orders([3, 'c2', 2]));
    expect(await run(moved)).toMatchObject({ filesReplaced: 1, inserted: 1 });
    const rows = await rowsOf(moved, ['order_id', 'status']);
    expect(rows.map((r) => `${r.order_id} ${r.status}`)).toEqual(['1 a1', '2 b1', '3 c2']);
  });

  it('with the files left in the old folders, a file of the same name in the new folder is a new file: it replaces no rows', async () => {
    // Re-keyed, the remembered 2026/12/01/a.csv was taken for dt=2026-12-01/a.csv rewritten, and
    // its two rows were deleted for the new file's one (exit 0) though it never moved.
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const target = { uri: await tempDir('t', dirs), mode: 'append' };
    const at = (layout: string) =>
      makeConfig({
        source: { uri: dir, discover: { by: 'partition', layout, lookback: 2 } },
        target,
      });
    await land(src, session, '2026/12/01/a.csv', orders([1, 'a1', 1], [2, 'b1', 1]));
    expect(await run(at('{yyyy}/{mm}/{dd}'))).toMatchObject({ inserted: 2 });
    await land(src, session, 'dt=2026-12-01/a.csv', orders([7, 'new', 1]));
    const edited = at('dt={yyyy}-{mm}-{dd}');
    expect(await run(edited)).toMatchObject({ inserted: 1, dataFilesRemoved: 0 });
    const rows = await rowsOf(edited, ['order_id', 'status']);
    expect(rows.map((r) => `${r.order_id} ${r.status}`)).toEqual(['1 a1', '2 b1', '7 new']);
  });
});

describe('a new orderBy or key and the remembered deletes', () => {
  it('orderBy seq -> seq2 with key 1 deleted: refused (exit 2) until --accept-config-change; a late older row then comes back, as accepted', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    const bySeq = mergeSetup(src, tableUri, {});
    await land3([
      [1, 'EU', 'placed', 1, 1, false],
      [2, 'EU', 'placed', 1, 1, false],
    ]);
    await run(bySeq);
    await land3([[1, 'EU', 'gone', 5, 5, true]]);
    expect(await run(bySeq)).toMatchObject({ deleted: 1 });

    const bySeq2 = mergeSetup(src, tableUri, { orderBy: 'seq2' });
    await land3([[1, 'EU', 'late', 3, 3, false]]);
    const seq2Job = {
      source: bySeq2.job.source,
      target: {
        uri: tableUri,
        mode: 'merge',
        key: ['order_id'],
        orderBy: 'seq2',
        deleteWhen: 'deleted',
      },
    };
    const checked = await validate(seq2Job);
    expect(checked.status).toBe('problems');
    expect(checked.problems).toEqual([
      expect.objectContaining({
        field: 'jobs[0].target.orderBy',
        message: expect.stringMatching(/changed from seq to seq2.*--accept-config-change/),
        kind: 'usage',
      }),
    ]);
    expect(checked.warnings).toEqual([
      expect.objectContaining({
        field: 'jobs[0].target.orderBy',
        message: expect.stringMatching(/^target.orderBy changed from seq to seq2/),
      }),
    ]);
    const file = await configFile(seq2Job);
    const first = await cliRun(file);
    expect(first.code).toBe(2);
    expect(first.report.error?.context).toMatchObject({
      field: 'target.orderBy',
      from: 'seq',
      to: 'seq2',
      tombstones: 1,
    });
    expect(first.report.error?.message).toMatch(
      /target.orderBy changed from seq to seq2.*1 deleted key.*--accept-config-change.*tidemark reset/,
    );
    expect(await rowsOf(bySeq2, ['order_id', 'status'])).toEqual([
      { order_id: 2, status: 'placed' },
    ]);

    // Accepted: the tombstones are dropped, the run says so, and the late row loads.
    const { code, report: accepted } = await cliRun(file, '--accept-config-change');
    expect(code).toBe(0);
    expect(accepted).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(accepted.configChanges).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'target.orderBy', from: 'seq', to: 'seq2' }),
        expect.objectContaining({
          field: 'target.orderBy (tombstones)',
          effect: expect.stringMatching(/dropped, as --accept-config-change asks/),
        }),
      ]),
    );
    expect(await rowsOf(bySeq2, ['order_id', 'status'])).toEqual([
      { order_id: 1, status: 'late' },
      { order_id: 2, status: 'placed' },
    ]);
    const state = (await readTarget(session, bySeq2)).state;
    expect(state.tombstones?.files ?? []).toEqual([]);
    expect(state.configuredAs?.target).toMatchObject({ orderBy: 'seq2' });
    // The next run has nothing to refuse.
    expect(await run(bySeq2)).toMatchObject({ status: 'nothing-new' });
  });

  it('a reset accepts the new orderBy: the tombstones that do not fit are dropped and the run goes on', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    const bySeq = mergeSetup(src, tableUri, {});
    await land3([[1, 'EU', 'placed', 1, 1, false]]);
    await run(bySeq);
    await land3([[1, 'EU', 'gone', 5, 5, true]]);
    await run(bySeq);
    const bySeq2 = mergeSetup(src, tableUri, { orderBy: 'seq2' });
    await refused(bySeq2);
    unwrap(
      await resetJob(
        bySeq2.job,
        { storage: bySeq2.storage, logger: silentLogger(), tty: false },
        { to: '2026-12-01' },
      ),
    );
    expect((await readTarget(session, bySeq2)).state.tombstones?.files ?? []).toEqual([]);
    expect(await run(bySeq2)).toMatchObject({ status: 'nothing-new' });
  });

  it('key [order_id, region] -> [order_id]: the tombstones are re-keyed, so a late older row of a deleted key stays deleted', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    const wide = mergeSetup(src, tableUri, { key: ['order_id', 'region'] });
    await land3([
      [1, 'EU', 'placed', 1, 1, false],
      [2, 'US', 'placed', 1, 1, false],
    ]);
    await run(wide);
    await land3([[1, 'EU', 'gone', 5, 5, true]]);
    expect(await run(wide)).toMatchObject({ deleted: 1 });

    const narrow = mergeSetup(src, tableUri, { key: ['order_id'] });
    await land3([[1, 'EU', 'late', 3, 3, false]]);
    const report = await run(narrow);
    expect(report).toMatchObject({ status: 'succeeded', inserted: 0, skippedStale: 1 });
    expect(report.configChanges).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          field: 'target.key (tombstones)',
          effect: expect.stringMatching(/re-keyed on \[order_id\]/),
        }),
      ]),
    );
    expect(await rowsOf(narrow, ['order_id', 'status'])).toEqual([
      { order_id: 2, status: 'placed' },
    ]);
    // Written back under the new key: later batches read them without re-keying.
    expect((await readTarget(session, narrow)).state.tombstones).toMatchObject({
      key: ['order_id'],
      files: [expect.objectContaining({ rows: 1 })],
    });
    await land3([[1, 'EU', 'later', 4, 4, false]]);
    expect(await run(narrow)).toMatchObject({ inserted: 0, skippedStale: 1 });
  });

  it("a backfill's deletes count too: refused until a run accepts the new orderBy, then neither the job nor its backfill refuses", async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const at = (day: string, rows: Array<[number, string, string, number, number, boolean]>) =>
      new LocalStorage(src).write(
        `2026/11/${day}/f.csv`,
        ['order_id,region,status,seq,seq2,deleted', ...rows.map((r) => r.join(','))].join('\n') +
          '\n',
      );
    await at('20', [
      [1, 'EU', 'placed', 1, 1, false],
      [2, 'EU', 'placed', 1, 1, false],
    ]);
    await at('21', [[2, 'EU', 'gone', 5, 5, true]]);
    await at('30', [[3, 'EU', 'placed', 1, 1, false]]);
    const bySeq = makeConfig({
      source: {
        uri: src,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2, start: '2026-11-30' },
      },
      target: {
        uri: tableUri,
        mode: 'merge',
        key: ['order_id'],
        orderBy: 'seq',
        deleteWhen: 'deleted',
      },
    });
    await run(bySeq);
    expect(await backfill(bySeq, { from: '2026-11-20', to: '2026-11-21' })).toMatchObject({
      deleted: 1,
    });
    const bySeq2 = {
      ...bySeq,
      job: { ...bySeq.job, target: { ...bySeq.job.target, orderBy: 'seq2' } },
    };
    const err = await refused(bySeq2);
    expect(err.message).toMatch(/orders@backfill: target.orderBy changed from seq to seq2/);
    const before = await backfillOutcome(bySeq2, {
      from: '2026-11-20',
      to: '2026-11-21',
      restart: true,
    });
    expect(before.ok ? null : before.error).toBeInstanceOf(ConfigError);

    expect(await run(bySeq2, { acceptConfigChange: true })).toMatchObject({
      status: 'nothing-new',
    });
    await at('30', [[3, 'EU', 'paid', 2, 2, false]]);
    // The acceptance is recorded only with a commit: this run commits, the next ones do not ask again.
    expect(await run(bySeq2, { acceptConfigChange: true })).toMatchObject({
      status: 'succeeded',
      updated: 1,
    });
    await at('30', [[3, 'EU', 'shipped', 3, 3, false]]);
    expect(await run(bySeq2)).toMatchObject({ status: 'succeeded', updated: 1 });
    expect(
      await backfill(bySeq2, { from: '2026-11-20', to: '2026-11-21', restart: true }),
    ).toMatchObject({ status: 'succeeded' });
  });

  it('backfill --accept-config-change drops the deletes that no longer fit, as run does, and says so; without it the backfill is refused (exit 2)', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const at = (day: string, rows: Array<[number, string, string, number, number, boolean]>) =>
      new LocalStorage(src).write(
        `2026/11/${day}/f.csv`,
        ['order_id,region,status,seq,seq2,deleted', ...rows.map((r) => r.join(','))].join('\n') +
          '\n',
      );
    await at('29', [[1, 'EU', 'placed', 1, 1, false]]);
    await at('30', [[1, 'EU', 'gone', 5, 5, true]]);
    const bySeq = makeConfig({
      source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 } },
      target: {
        uri: tableUri,
        mode: 'merge',
        key: ['order_id'],
        orderBy: 'seq',
        deleteWhen: 'deleted',
      },
    });
    expect(await run(bySeq)).toMatchObject({ deleted: 0 }); // one batch: the delete is the key's last event
    expect((await readTarget(session, bySeq)).state.tombstones?.files.length).toBeGreaterThan(0);
    const bySeq2 = {
      ...bySeq,
      job: { ...bySeq.job, target: { ...bySeq.job.target, orderBy: 'seq2' } },
    };
    // A late row older than the delete on seq, landed for the backfill to load.
    await at('20', [[1, 'EU', 'late', 2, 2, false]]);
    const refusedBackfill = await backfillOutcome(bySeq2, { from: '2026-11-20', to: '2026-11-20' });
    expect(refusedBackfill.ok ? null : refusedBackfill.error).toBeInstanceOf(ConfigError);
    expect(((refusedBackfill.ok ? null : refusedBackfill.error) as ConfigError).message).toMatch(
      /target.orderBy changed from seq to seq2/,
    );

    const file = await configFile({
      source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 } },
      target: {
        uri: tableUri,
        mode: 'merge',
        key: ['order_id'],
        orderBy: 'seq2',
        deleteWhen: 'deleted',
      },
    });
    const backfillCli = (...flags: string[]) =>
      cli(
        [
          'backfill',
          '--config',
          file,
          '--from',
          '2026-11-20',
          '--to',
          '2026-11-20',
          '--json',
          ...flags,
        ],
        { logger: silentLogger(), tty: false },
      );
    expect((await backfillCli()).code).toBe(2);

    const accepted = await backfill(
      bySeq2,
      { from: '2026-11-20', to: '2026-11-20' },
      { acceptConfigChange: true },
    );
    expect(accepted).toMatchObject({ status: 'succeeded', inserted: 1 });
    expect(accepted.configChanges).toEqual([
      expect.objectContaining({
        field: 'target.orderBy (tombstones)',
        from: 'seq',
        to: 'seq2',
        effect: expect.stringContaining('dropped'),
      }),
    ]);
    // The late row came back, as the flag warns it may.
    expect((await readTarget(session, bySeq2)).rows.map((r) => r.status)).toEqual(['late']);

    // Through the CLI: the flag is taken, exit 0.
    expect((await backfillCli('--restart', '--accept-config-change')).code).toBe(0);
  });

  it('key [order_id] -> [order_id, region] with a delete remembered: refused, the tombstones do not hold region', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    await land3([[1, 'EU', 'placed', 1, 1, false]]);
    await run(mergeSetup(src, tableUri, {}));
    await land3([[1, 'EU', 'gone', 5, 5, true]]);
    await run(mergeSetup(src, tableUri, {}));
    await land3([[1, 'EU', 'late', 3, 3, false]]);
    const err = await refused(mergeSetup(src, tableUri, { key: ['order_id', 'region'] }));
    expect(err.message).toMatch(
      /target.key changed from \[order_id\] to \[order_id, region\]: the remembered deletes do not hold region/,
    );
    expect(await rowsOf(mergeSetup(src, tableUri, {}), ['order_id'])).toEqual([]);
  });
});

describe('a key the stored rows do not hold once', () => {
  it('key [order_id, region] -> [order_id] on a table with two rows of order 1: refused naming the key, nothing changes', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    await land3([
      [1, 'EU', 'placed', 1, 1, false],
      [1, 'US', 'placed', 1, 1, false],
      [2, 'US', 'placed', 1, 1, false],
    ]);
    await run(mergeSetup(src, tableUri, { key: ['order_id', 'region'] }));
    const narrow = mergeSetup(src, tableUri, { key: ['order_id'] });
    await land3([[1, 'EU', 'paid', 2, 2, false]]);
    const err = await refused(narrow);
    expect(err.context).toMatchObject({ field: 'target.key', duplicateKeys: 1 });
    expect(err.message).toMatch(
      /target.key changed from \[order_id, region\] to \[order_id\], but the table holds more than one row for 1 such key: order_id=1 \(2 rows\)/,
    );
    expect(await rowsOf(narrow, ['order_id', 'region', 'status'])).toEqual([
      { order_id: 1, region: 'EU', status: 'placed' },
      { order_id: 1, region: 'US', status: 'placed' },
      { order_id: 2, region: 'US', status: 'placed' },
    ]);
    // --accept-config-change does not override it: the rows conflict, not the tombstones.
    await refused(narrow, { acceptConfigChange: true });
  });

  it('append -> merge on a table holding an order twice: refused naming it', async () => {
    const src = await tempDir('src', dirs);
    const land3 = cdcFeed(src);
    const appendTo = async (rows: Array<[number, string, string, number, number, boolean]>) => {
      const tableUri = await tempDir('t', dirs);
      await land3(rows);
      await run(keylessSetup(src, tableUri, 'append'));
      return tableUri;
    };
    const twice = await appendTo([
      [7, 'EU', 'placed', 1, 1, false],
      [7, 'EU', 'paid', 2, 2, false],
    ]);
    const err = await refused(mergeSetup(src, twice, { deleteWhen: undefined }));
    expect(err.context).toMatchObject({ field: 'target.mode' });
    expect(err.message).toMatch(
      /target.mode changed from append to merge on key \[order_id\], but the table holds more than one row for \d+ such keys?: order_id=7 \(2 rows\)/,
    );
  });

  it('replace (without a key) -> merge on a table holding an order twice: refused naming the mode change', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    await land3([
      [7, 'EU', 'placed', 1, 1, false],
      [7, 'EU', 'paid', 2, 2, false],
    ]);
    await run(keylessSetup(src, tableUri, 'replace'));
    const err = await refused(mergeSetup(src, tableUri, { deleteWhen: undefined }));
    expect(err.context).toMatchObject({ field: 'target.mode' });
    expect(err.message).toMatch(
      /target.mode changed from replace to merge on key \[order_id\], but the table holds more than one row for 1 such key: order_id=7 \(2 rows\)/,
    );
    expect(err.message).toMatch(/Keep target.mode as it was/);
  });

  it('merge -> replace: the next delivery is the whole table, and the run says so', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    await land3([
      [1, 'EU', 'placed', 1, 1, false],
      [2, 'EU', 'placed', 1, 1, false],
    ]);
    await run(mergeSetup(src, tableUri, { deleteWhen: undefined }));
    const source = new LocalStorage(src);
    await source.write(
      '2026/12/02/full.csv',
      'order_id,region,status,seq,seq2,deleted\n2,EU,paid,2,2,false\n3,EU,placed,1,1,false\n',
    );
    const replace = keylessSetup(src, tableUri, 'replace');
    const report = await run(replace);
    expect(report).toMatchObject({ status: 'succeeded' });
    expect(report.configChanges).toEqual([
      expect.objectContaining({
        field: 'target.mode',
        from: 'merge',
        to: 'replace',
        effect: expect.stringMatching(/replaces the whole table from now/),
      }),
    ]);
    expect(await rowsOf(replace, ['order_id', 'status'])).toEqual([
      { order_id: 2, status: 'paid' },
      { order_id: 3, status: 'placed' },
    ]);
  });

  it('append -> merge where every key has one row: the run merges and says so', async () => {
    const src = await tempDir('src', dirs);
    const tableUri = await tempDir('t', dirs);
    const land3 = cdcFeed(src);
    await land3([
      [1, 'EU', 'placed', 1, 1, false],
      [2, 'EU', 'placed', 1, 1, false],
    ]);
    await run(keylessSetup(src, tableUri, 'append'));
    const merge = mergeSetup(src, tableUri, { deleteWhen: undefined });
    await land3([[1, 'EU', 'paid', 2, 2, false]]);
    const report = await run(merge);
    expect(report).toMatchObject({ status: 'succeeded', updated: 1 });
    expect(report.configChanges).toEqual([
      expect.objectContaining({ field: 'target.mode', from: 'append', to: 'merge' }),
    ]);
    expect(await rowsOf(merge, ['order_id', 'status'])).toEqual([
      { order_id: 1, status: 'paid' },
      { order_id: 2, status: 'placed' },
    ]);
  });
});
