/**
 * `kill -9` of the real CLI process at random moments, over and over, while files keep
 * landing; then one run to completion. Two jobs share the landing zone: `latest` (partition
 * discovery, MERGE by key into a table with column mapping and a change data feed, writing
 * deletion vectors for files that keep most of their rows and rewriting the others) and `events` (modification-time discovery, append). After every kill the
 * tables must be readable with no row loaded twice and pass the invariant check at every
 * version (../helpers/table-check.ts); at the end `latest` equals the
 * latest row per key of everything landed and `events` holds every landed row exactly once.
 *
 * Kill moments spread over the work phase of a run (from its first log line, i.e. after the Node,
 * AWS SDK and DuckDB start-up, to half as long again as an uninterrupted run): the range is cut
 * into KILLS * 1.5 equal slices and day d draws its moment uniformly within slice d (round and
 * round), so every part of the work phase gets a kill in each pass, landing in discovery, fetch,
 * load, data-file upload, commit and checkpoint, with fewer kills than uniform draws need for the
 * same spread. 8 kills by default; TIDEMARK_KILLS=20 (or more) for a longer soak. The seed is
 * printed on failure; set TIDEMARK_KILL_SEED to replay a sequence.
 *
 * Sources are on s3rver (the runs download their batches into the spool; the children inherit
 * its credentials from the environment), targets are local folders. SIGKILL cannot run cleanup,
 * so a killed run leaves its spool folder, downloads and all, behind; the next run of the job
 * removes spool folders of dead runs (src/job/spool.ts). Checked here too.
 *
 * No wall-clock budget for the whole: each day (land its files, start a run, kill it, check the
 * tables) has a limit of its own, DAY_MS scaled to the machine (test/helpers/machine.ts), the final
 * run DAY_MS plus FILE_MS per landed file, and the test's timeout is the sum of those limits over
 * the most days it may take. A stuck run is killed and named; a busy machine only makes the test
 * slower.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  openS3JobEnv,
  orders,
  readTarget,
  sortRows,
  targetChecker,
  tempDir,
  type OrderRow,
} from '../job/helpers.js';
import { runCli, spawnCli, type CliProcess } from './process.js';
import { sleep } from '../helpers/cli.js';
import { stepBudget, withinStep } from '../helpers/machine.js';
import { prng } from '../../scripts/lib/prng.js';

const KILLS = Number(process.env['TIDEMARK_KILLS'] ?? 8);
/** Slices of the kill range [0, 1.5 × work phase]: about one kill per slice of the work phase itself. */
const SLICES = Math.ceil(KILLS * 1.5);
/** Days of files the kill loop may land before it must have made KILLS kills (about 1.5 days per kill: 90 for 20 kills). */
const MAX_DAYS = 4 * KILLS + 10;
/** Files landed per day: eight in the day's folder, a late one in the day before. */
const FILES_PER_DAY = 9;
/**
 * Limit of one day of the loop on a quiet machine, where it takes 2–4 s: land the day's files,
 * start the CLI (Node, AWS SDK and DuckDB start-up), kill it or let it finish, read both tables.
 */
const DAY_MS = 30_000;
/**
 * Limit per file of the final run on top of DAY_MS. It loads what the killed runs left, up to
 * every landed file (100 files took 13 s with the test on one busy core), so its limit grows
 * with the files landed.
 */
const FILE_MS = 2_000;
let session: DuckSession;
let s3: S3rverHandle;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});

afterAll(() => closeS3JobEnv(s3, session, dirs));

/** Delta log versions present under a local table root (commit files only). */
async function versionsOf(root: string): Promise<number[]> {
  const names = await fsp.readdir(path.join(root, '_delta_log')).catch(() => [] as string[]);
  return names
    .filter((n) => /^\d{20}\.json$/.test(n))
    .map((n) => Number(n.slice(0, 20)))
    .sort((a, b) => a - b);
}

/** Spool folders of the two jobs' runs (other temp folders, e.g. of checkpoint writes, are not the job's). */
async function spoolFolders(tmp: string): Promise<string[]> {
  return (await fsp.readdir(tmp))
    .filter((n) => n.startsWith('tidemark-latest-') || n.startsWith('tidemark-events-'))
    .sort();
}

describe('killing the tidemark process', () => {
  it(
    `${KILLS} SIGKILLs spread over the work phase while files land, then a full run: every file loaded exactly once in merge and append mode`,
    { timeout: stepBudget(MAX_DAYS + 1, DAY_MS) + stepBudget(MAX_DAYS * FILES_PER_DAY, FILE_MS) },
    async () => {
      const seed = Number(process.env['TIDEMARK_KILL_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
      const random = prng(seed);
      const where = `(kill seed ${seed})`;
      const { source, uri: sourceRoot, storageConfig: storage } = s3.landingZone('kill-src');
      const spoolTmp = await tempDir('kill-tmp', dirs);
      const [mergeRoot, appendRoot] = [
        await tempDir('kill-merge', dirs),
        await tempDir('kill-append', dirs),
      ];
      const jobs = [
        {
          name: 'latest',
          source: {
            uri: sourceRoot,
            discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 },
          },
          target: {
            uri: mergeRoot,
            key: ['order_id'],
            orderBy: 'seq',
            rewriteFilesBelow: 0,
            columnMapping: 'name',
            changeDataFeed: true,
          },
          maxFilesPerBatch: 2,
        },
        {
          name: 'events',
          source: { uri: sourceRoot, discover: { by: 'modified', settle: '1h' } },
          target: { uri: appendRoot, mode: 'append' },
          maxFilesPerBatch: 2,
        },
      ];
      const configPath = path.join(spoolTmp, '..', `${path.basename(spoolTmp)}.yaml`);
      dirs.push(configPath);
      await fsp.writeFile(configPath, JSON.stringify({ storage, jobs }));
      const latest = makeConfig(jobs[0]!);
      const events = makeConfig({ ...jobs[1]!, name: 'events' });
      const args = ['run', '--config', configPath, '--json'];
      const checkers = new Map(
        [latest, events].map((setup) => [setup, targetChecker(session, setup)]),
      );
      const env = { TMPDIR: spoolTmp };

      const landed: OrderRow[] = [];
      let seq = 0;
      let fileNo = 0;
      /** Eight files in day `day` (and a late one in the day before), keys overlapping across files and days. */
      const landDay = async (day: number) => {
        // Day 1 is 2025-01-01; later days run on into February and March if needed.
        const folder = (d: number) =>
          new Date(Date.UTC(2025, 0, d)).toISOString().slice(0, 10).replaceAll('-', '/');
        const formats = ['csv', 'ndjson', 'parquet'];
        const keys = [`${folder(day)}/`, ...(day > 1 ? [`${folder(day - 1)}/late-`] : [])];
        for (const [i, base] of [
          ...Array(FILES_PER_DAY - 1).fill(keys[0]),
          ...keys.slice(1),
        ].entries()) {
          const rows = orders(
            [(fileNo * 7 + i) % 13, `s${seq}`, ++seq],
            [(fileNo * 3 + i) % 13, `s${seq}`, ++seq],
          );
          const no = fileNo++;
          await land(source, session, `${base}f${no}.${formats[no % 3]}`, rows);
          landed.push(...rows);
        }
      };

      // A step within its limit; a run still going at the limit is killed.
      let proc: CliProcess | undefined;
      const step = <T>(what: string, work: () => Promise<T>, limitMs = DAY_MS) =>
        withinStep(`${where} ${what}`, limitMs, work, () => proc?.child.kill('SIGKILL'));

      // An uninterrupted run measures the work phase: from the first log line to the exit.
      const workMs = await step('day 1 (the uninterrupted run)', async () => {
        await landDay(1);
        const firstRun = (proc = spawnCli(args, env));
        let workStart = 0;
        firstRun.child.stderr!.once('data', () => (workStart = Date.now()));
        const first = await firstRun.done;
        expect(first.code, first.stderr).toBe(0);
        return Math.max(300, Date.now() - workStart);
      });

      let kills = 0;
      let finishedBeforeKill = 0;
      // Runs drawn late in the range finish before their kill; keep landing days until KILLS kills.
      for (let day = 2; kills < KILLS && day < MAX_DAYS; day++) {
        await step(`day ${day} (kill ${kills + 1})`, async () => {
          await landDay(day);
          const run = (proc = spawnCli(args, env));
          await new Promise<void>((resolve) =>
            run.child.stderr!.once('data', () => resolve()).once('close', () => resolve()),
          );
          // A run that ends before its kill moment is not waited for any longer.
          await Promise.race([
            sleep(((((day - 2) % SLICES) + random()) / SLICES) * workMs * 1.5),
            run.done,
          ]);
          const killed = run.child.exitCode === null && run.child.kill('SIGKILL');
          const exit = await run.done;
          if (killed && exit.signal === 'SIGKILL') kills++;
          else {
            finishedBeforeKill++;
            expect(exit.code, `${where} ${exit.stderr}`).toBe(0);
          }
          // Whatever the moment, the tables are consistent: readable, contiguous, nothing twice.
          for (const [setup, root] of [
            [latest, mergeRoot],
            [events, appendRoot],
          ] as const) {
            const view = await readTarget(session, setup);
            expect(
              duplicateRids(view.rows),
              `${where} after kill ${kills} (${setup.job.name})`,
            ).toEqual([]);
            const versions = await versionsOf(root);
            expect(versions, where).toEqual(versions.map((_, i) => i));
            expect(
              (await checkers.get(setup)!.check()).problems,
              `${where} after kill ${kills} (${setup.job.name})`,
            ).toEqual([]);
          }
        });
      }
      expect(kills, `${where}: ${finishedBeforeKill} runs finished before their kill`).toBe(KILLS);

      const orphansBefore = await spoolFolders(spoolTmp);
      const final = await step(
        `final run (${fileNo} files landed)`,
        () => (proc = spawnCli(args, env)).done,
        DAY_MS + fileNo * FILE_MS,
      );
      expect(final.code, `${where} ${final.stderr}`).toBe(0);
      const reports = final.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { job: string; status: string });
      expect(reports.map((r) => r.job)).toEqual(['latest', 'events']);

      const mergeView = await readTarget(session, latest);
      expect(mergeView.rows, where).toEqual(expectedLatest(landed));
      const mergeCheck = await checkers.get(latest)!.check();
      expect(mergeCheck.problems, where).toEqual([]);
      expect(
        mergeCheck.versionsWithDv,
        `${where}: the MERGEs wrote deletion vectors`,
      ).toBeGreaterThan(0);
      expect(mergeView.snapshot!.metadata.configuration).toMatchObject({
        'delta.columnMapping.mode': 'name',
        'delta.enableChangeDataFeed': 'true',
      });
      const appendView = await readTarget(session, events);
      expect(duplicateRids(appendView.rows), where).toEqual([]);
      expect(appendView.rows, where).toEqual(sortRows(landed));
      expect(appendView.state.totals.filesLoaded).toBe(fileNo);
      expect(mergeView.state.totals.filesLoaded).toBe(fileNo);

      // The final run leaves no spool folder of its own, and removes those of the killed runs.
      expect(orphansBefore.length, where).toBeLessThanOrEqual(2 * kills);
      expect(await spoolFolders(spoolTmp), where).toEqual([]);
    },
  );

  it('SIGTERM stops a run: exit 130, its spool folder removed, nothing partial committed; the rerun loads the rest exactly once', async () => {
    const { source, uri: sourceRoot, storageConfig: storage } = s3.landingZone('term-src');
    const landed: OrderRow[] = [];
    for (let i = 0; i < 16; i++) {
      const rows = orders([i, 'placed', 1], [i + 100, 'placed', 1]);
      await land(source, session, `2025/03/0${1 + (i % 4)}/f${i}.csv`, rows);
      landed.push(...rows);
    }
    const spoolTmp = await tempDir('term-tmp', dirs);
    const job = {
      name: 'events',
      source: { uri: sourceRoot, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { uri: await tempDir('term-t', dirs), mode: 'append' },
      maxFilesPerBatch: 1,
    };
    const configPath = path.join(await tempDir('term-cfg', dirs), 'tidemark.yaml');
    await fsp.writeFile(configPath, JSON.stringify({ storage, jobs: [job] }));
    const setup = makeConfig(job);

    const proc = spawnCli(['run', '--config', configPath, '--json'], { TMPDIR: spoolTmp });
    // Stop it once a batch or two are committed.
    await new Promise<void>((resolve) => {
      proc.child.stderr!.on('data', (chunk: Buffer) => {
        if (chunk.toString('utf8').includes('batch committed')) resolve();
      });
      proc.child.once('close', () => resolve());
    });
    proc.child.kill('SIGTERM');
    const stopped = await proc.done;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toContain('SIGTERM received');
    expect(JSON.parse(stopped.stdout)).toMatchObject({
      job: 'events',
      status: 'failed',
      error: { type: 'Interrupted', retryable: true },
    });
    expect(await spoolFolders(spoolTmp)).toEqual([]);
    const partial = await readTarget(session, setup);
    expect(partial.rows.length).toBeLessThan(landed.length);
    expect(partial.rows.length).toBe(2 * partial.state.totals.filesLoaded);

    const rerun = await runCli(['run', '--config', configPath, '--json'], { TMPDIR: spoolTmp });
    expect(rerun.code, rerun.stderr).toBe(0);
    const table = await readTarget(session, setup);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(sortRows(landed));
  });
});
