/**
 * `npm run bench -- seed-scale` (docs/benchmarks.md, "The tutorial's scale"): the tutorial's
 * 500,000,000-row orders table and one night of changes through `tidemark run`, beside a full
 * reload.
 *
 *   build   the table in .bench/seed-scale/table-<rows>/, unpartitioned, clustered by order_id,
 *           ROWS_PER_FILE rows per file, one commit per chunk of CHUNK_ROWS orders: an interrupted
 *           build resumes at the next chunk (the table's version says how many are in).
 *   night   0.5 % of the orders changed, scattered over the whole history, plus 0.1 % new ones,
 *           as 12 Parquet files in one day folder; loaded by the job (partition discovery, MERGE on
 *           order_id, latest updated_at) in a child process under /usr/bin/time, on a copy of the
 *           table whose data files are hard links (the built table stays as built, so the night can
 *           be run again). Figures: wall, CPU, peak RSS (the kernel's), bytes written, and the
 *           requests the run would send to S3 (./seed-night.ts counts the store's calls).
 *   reload  the full reload of the same night (every row read, the changes applied, every row
 *           written, an overwrite commit: ./full-rewrite.ts), measured on the table's first
 *           `sample` of the rows (the table as it was after those chunks: its log cut there, the
 *           files hard-linked) and extrapolated linearly to the full table (said so).
 */
import { capture } from '../lib/capture.js';
import { existsSync } from 'node:fs';
import { cp, link, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStorage } from '../../src/storage/local.js';
import { ident, str } from '../../src/engine/sql.js';
import { appendAndCommit, mergeAndCommit, openTable } from '../lib/tables.js';
import { timed } from './clock.js';
import { benchEnv, describeEnv } from './env.js';
import { fullRewrite } from './full-rewrite.js';
import { ORDER_COLUMNS, ORDER_KEY, ORDER_VERSION, orderRowSql } from './orders.js';
import { filesUnder } from './peers/peer-process.js';
import { count, mib, printTables, secs, times, writeJson } from './report.js';
import type { NightResult } from './seed-night.js';
import { progress, withSession } from './session.js';
import { BENCH_ROOT } from './workspace.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const TSX = join(REPO, 'node_modules/tsx/dist/loader.mjs');
const BENCH = join(REPO, 'scripts/bench.ts');
const TIME_BINARY = '/usr/bin/time';

/** 1M rows per file (~14 MB): 500 files for 500M rows; see docs/benchmarks.md for the choice. */
export const ROWS_PER_FILE = 1_000_000;
const CHUNK_ROWS = 10_000_000;
const NIGHT_FILES = 12;
const CHANGED_SHARE = 0.005;
const NEW_SHARE = 0.001;

export interface SeedScaleOptions {
  rows: number;
  /** Share of the rows of the table the full reload is measured on. */
  sample: number;
  /** Where the tables stay between runs (resumable build). */
  dir: string;
  jsonPath: string;
  command: string;
}

export async function benchSeedScale(opts: SeedScaleOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  await mkdir(opts.dir, { recursive: true });
  const sampleRows = Math.round(opts.rows * opts.sample);
  const table = await build(opts.dir, opts.rows);
  const night = await writeNight(opts.dir, opts.rows);
  const loadBefore = loadavg();
  const run = await runNight(opts.dir, table.dir, night);
  const loadAfterNight = loadavg();
  const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  progress(
    `the night: ${secs(run.ms)}, CPU ${secs(run.cpuMs)}, peak RSS ${mib(run.peakRssBytes)}, wrote ${mib(run.bytesWritten)}, ` +
      `S3-equivalent ${JSON.stringify(run.child.requests)} (GET ${mib(run.child.getBytes)}), rows after ${count(run.rowsAfter)}, changed rows read back: ${run.changedReadBack}, ` +
      `load ${fmtLoad(loadBefore)} -> ${fmtLoad(loadAfterNight)}`,
  );
  const reload = await measureReload(opts.dir, table.dir, opts.rows, sampleRows);
  const loadAfterReload = loadavg();
  const extrapolated = {
    ms: (reload.ms * opts.rows) / sampleRows,
    cpuMs: (reload.cpuMs * opts.rows) / sampleRows,
  };
  printTables([
    {
      title: `The tutorial's scale: ${count(opts.rows)} orders, ${table.files} files, ${mib(table.bytes)}; one night: ${count(night.updates)} changed (scattered) + ${count(night.inserts)} new orders in ${NIGHT_FILES} files`,
      header: [
        'step',
        'wall',
        'CPU',
        'peak RSS',
        'written',
        'S3-equivalent requests',
        'S3 GET bytes',
        'vs tidemark run',
        'load avg (1/5/15) before → after',
      ],
      rows: [
        [
          'tidemark run (the night)',
          secs(run.ms),
          secs(run.cpuMs),
          mib(run.peakRssBytes),
          mib(run.bytesWritten),
          Object.entries(run.child.requests)
            .map(([k, v]) => `${k} ${v}`)
            .join(', '),
          mib(run.child.getBytes),
          '1.00 ×',
          `${fmtLoad(loadBefore)} → ${fmtLoad(loadAfterNight)}`,
        ],
        [
          `full reload, measured on ${count(sampleRows)} rows`,
          secs(reload.ms),
          secs(reload.cpuMs),
          mib(reload.peakRssBytes),
          mib(reload.bytesWritten),
          '-',
          '-',
          times(reload.ms / run.ms),
          `${fmtLoad(loadAfterNight)} → ${fmtLoad(loadAfterReload)}`,
        ],
        [
          'full reload, extrapolated ×' + (opts.rows / sampleRows).toFixed(0) + ' (linear)',
          secs(extrapolated.ms),
          secs(extrapolated.cpuMs),
          '-',
          mib((reload.bytesWritten * opts.rows) / sampleRows),
          '-',
          '-',
          times(extrapolated.ms / run.ms),
          '',
        ],
      ],
    },
  ]);
  process.stdout.write(
    `build of the ${count(opts.rows)}-row table: ${secs(table.buildMs)} over all resumed runs (${table.builtNow} of ${table.chunks} chunks built by this run)\n` +
      `night: ${count(run.child.rowsRead)} rows read, ${count(run.child.rowsAfterDedupe)} after dedupe, ${run.child.commits} commit(s), status ${run.child.status}; phases ${JSON.stringify(run.child.phases)}\n` +
      `rows after the night: ${count(run.rowsAfter)} (expected ${count(opts.rows + night.inserts)}), changed rows read back: ${run.changedReadBack ? 'all match' : 'MISMATCH'}\n`,
  );
  await writeJson(opts.jsonPath, {
    benchmark: 'seed-scale',
    env,
    options: opts,
    table,
    night,
    run,
    reload: { ...reload, sampleRows, extrapolated },
    load: { loadBefore, loadAfterNight, loadAfterReload },
  });
  process.stdout.write(`result: ${opts.jsonPath}\n`);
  if (run.rowsAfter !== opts.rows + night.inserts || !run.changedReadBack)
    throw new Error("[bench] seed-scale: the night's table failed its check");
}

/** Orders per commit of the build of a table of `rows`. */
function chunkRowsOf(rows: number): number {
  return Math.min(CHUNK_ROWS, Math.max(ROWS_PER_FILE, Math.ceil(rows / 10)));
}

interface BuiltTable {
  dir: string;
  files: number;
  bytes: number;
  chunks: number;
  builtNow: number;
  buildMs: number;
}

/** Build (or finish building) the table of `rows` orders; one commit per chunk. */
async function build(root: string, rows: number): Promise<BuiltTable> {
  const dir = join(root, `table-${rows}`);
  const progressFile = join(root, `table-${rows}.build.json`);
  const chunkRows = chunkRowsOf(rows);
  const chunks = Math.ceil(rows / chunkRows);
  const before = existsSync(progressFile)
    ? (JSON.parse(await readFile(progressFile, 'utf8')) as { buildMs: number })
    : { buildMs: 0 };
  let buildMs = before.buildMs;
  let builtNow = 0;
  const live = await withSession(async (session) => {
    const table = openTable(LocalStorage.at(dir), session, { singleWriter: true });
    const done = ((await table.snapshot())?.version ?? -1) + 1;
    if (done < chunks)
      progress(
        `building ${count(rows)} orders in ${dir}: chunk ${done + 1} of ${chunks} next (${count(chunkRows)} rows each, resumable)`,
      );
    for (let c = done; c < chunks; c++) {
      const started = performance.now();
      const lo = c * chunkRows + 1;
      const hi = Math.min(rows, (c + 1) * chunkRows);
      await session.run(
        `CREATE OR REPLACE TEMP TABLE chunk AS SELECT ${orderRowSql('i', rows)} FROM range(${lo}, ${hi + 1}) AS r(i)`,
      );
      const common = { batch: 'chunk', targetFileRows: ROWS_PER_FILE };
      if (c === 0)
        await mergeAndCommit(table, session, {
          ...common,
          snapshot: null,
          keyColumns: [ORDER_KEY],
          orderBy: ORDER_VERSION,
        });
      else await appendAndCommit(table, session, common);
      await session.run('DROP TABLE chunk');
      const ms = performance.now() - started;
      buildMs += ms;
      builtNow++;
      await writeFile(progressFile, JSON.stringify({ buildMs }));
      progress(
        `  chunk ${c + 1}/${chunks}: ${secs(ms)} (built so far ${secs(buildMs)}, load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
    // The live files (an interrupted chunk may have left files no commit lists).
    return (await table.snapshot())!.files;
  });
  return {
    dir,
    files: live.length,
    bytes: live.reduce((n, f) => n + f.size, 0),
    chunks,
    builtNow,
    buildMs,
  };
}

interface Night {
  dir: string;
  updates: number;
  inserts: number;
}

/** The night's landing files (written once per table size). */
async function writeNight(root: string, rows: number): Promise<Night> {
  const dir = join(root, `night-${rows}`);
  const updates = Math.round(rows * CHANGED_SHARE);
  const inserts = Math.round(rows * NEW_SHARE);
  const done = join(dir, 'written.json');
  if (existsSync(done)) return JSON.parse(await readFile(done, 'utf8')) as Night;
  progress(`writing the night: ${count(updates)} scattered changes + ${count(inserts)} new orders`);
  await rm(dir, { recursive: true, force: true });
  const day = join(dir, '2026', '07', '01');
  await mkdir(day, { recursive: true });
  await withSession(async (s) => {
    // Distinct ids spread over all of 1..rows by a hash (a few collisions dropped, then topped up by LIMIT).
    await s.run(
      `CREATE TEMP TABLE night_ids AS SELECT id FROM (SELECT DISTINCT (1 + hash(j, 7) % ${rows})::BIGINT AS id FROM range(${Math.ceil(updates * 1.01)}) r(j)) LIMIT ${updates}`,
    );
    await s.run(
      `INSERT INTO night_ids SELECT i FROM range(${rows + 1}, ${rows + inserts + 1}) r(i)`,
    );
    await s.run(
      `CREATE TEMP TABLE night AS SELECT ${orderRowSql('id', rows, true)}, hash(id, 3) % ${NIGHT_FILES} AS f FROM night_ids`,
    );
    for (let f = 0; f < NIGHT_FILES; f++) {
      const path = join(day, `orders-${String(f).padStart(2, '0')}.parquet`);
      await s.run(
        `COPY (SELECT ${ORDER_COLUMNS.map(ident).join(', ')} FROM night WHERE f = ${f}) TO ${str(path)} (FORMAT parquet, COMPRESSION zstd)`,
      );
    }
  });
  const night = { dir, updates, inserts };
  await writeFile(done, JSON.stringify(night));
  return night;
}

interface NightRun {
  ms: number;
  cpuMs: number;
  peakRssBytes: number;
  bytesWritten: number;
  child: NightResult;
  rowsAfter: number;
  changedReadBack: boolean;
}

/**
 * A copy of the table whose data files are hard links (nothing is rewritten in place; the log and
 * tidemark's own folder are copied), so the night can run on the table as built, again and again.
 */
async function linkedCopy(from: string, to: string): Promise<void> {
  await rm(to, { recursive: true, force: true });
  for (const e of await readdir(from, { recursive: true, withFileTypes: true })) {
    const src = join(e.parentPath, e.name);
    const rel = relative(from, src);
    const dst = join(to, rel);
    if (!e.isFile()) continue;
    await mkdir(dirname(dst), { recursive: true });
    if (rel.startsWith('_delta_log') || rel.startsWith('_tidemark')) await cp(src, dst);
    else await link(src, dst);
  }
}

async function runNight(root: string, tableDir: string, night: Night): Promise<NightRun> {
  const target = join(root, 'night-run');
  const spool = join(root, 'night-spool');
  progress('the night: copying the table (hard links)');
  await linkedCopy(tableDir, target);
  await rm(spool, { recursive: true, force: true });
  await mkdir(spool, { recursive: true });
  const before = await filesUnder([target]);
  progress('the night: tidemark run');
  const started = performance.now();
  const out = await capture(TIME_BINARY, [
    '-f',
    '@@time %U %S %M',
    process.execPath,
    '--import',
    TSX,
    BENCH,
    'seed-night',
    '--landing',
    night.dir,
    '--target',
    target,
    '--spool',
    spool,
  ]);
  const wall = performance.now() - started;
  const m = /@@time (\S+) (\S+) (\d+)/.exec(out.stderr);
  const line = out.stdout.trim().split('\n').pop() ?? '';
  if (out.code !== 0 || !m)
    throw new Error(`[bench] the night failed (exit ${out.code}):\n${out.stderr.slice(-3000)}`);
  const child = JSON.parse(line) as NightResult;
  const after = await filesUnder([target]);
  let bytesWritten = 0;
  for (const [p, size] of after) if (before.get(p) !== size) bytesWritten += size;
  progress(
    `  ${secs(child.ms)} in the run (${secs(wall)} with the process start), checking the table`,
  );
  const check = await checkNight(target, night);
  return {
    ms: child.ms,
    cpuMs: (Number(m[1]) + Number(m[2])) * 1000,
    peakRssBytes: Number(m[3]) * 1024,
    bytesWritten,
    child,
    ...check,
  };
}

/** Row count after the night, and every changed row read back with the night's values. */
async function checkNight(
  target: string,
  night: Night,
): Promise<{ rowsAfter: number; changedReadBack: boolean }> {
  const { fingerprint, sampledMismatches } = await import('./verify.js');
  return withSession(async (s) => {
    const fp = await fingerprint(s, target, ORDER_COLUMNS);
    await s.run(
      `CREATE TEMP TABLE night AS SELECT * FROM read_parquet(${str(join(night.dir, '**', '*.parquet'))})`,
    );
    const bad = await sampledMismatches(s, target, {
      batch: 'night',
      key: ORDER_KEY,
      columns: ORDER_COLUMNS,
      sample: 1000,
    });
    return { rowsAfter: fp.rows, changedReadBack: bad.length === 0 };
  });
}

/**
 * The full reload, on the table's first `rows` orders: a copy of the table as it was when its
 * chunks up to `rows` were in (data files hard-linked, the log cut after that version, so the
 * sample is built exactly as the table was), and a night of the same shares for that size.
 */
async function measureReload(root: string, tableDir: string, tableRows: number, rows: number) {
  const target = join(root, 'reload-run');
  const chunkRows = chunkRowsOf(tableRows);
  if (rows % chunkRows !== 0)
    throw new Error(
      `[bench] the reload sample (${rows} rows) must be whole chunks of ${chunkRows}`,
    );
  const version = rows / chunkRows - 1;
  progress(
    `the full reload on the first ${count(rows)} orders (the table at version ${version}): copying it`,
  );
  await linkedCopy(tableDir, target);
  const log = join(target, '_delta_log');
  for (const name of await readdir(log)) {
    const v = /^(\d{20})\./.exec(name)?.[1];
    if (name === '_last_checkpoint' || (v !== undefined && Number(v) > version))
      await rm(join(log, name));
  }
  const night = await writeNight(root, rows);
  const before = await filesUnder([target]);
  const r = await withSession(async (s) => {
    await s.run(
      `CREATE TEMP TABLE night AS SELECT * FROM read_parquet(${str(join(night.dir, '**', '*.parquet'))})`,
    );
    return timed(() =>
      fullRewrite(
        s,
        target,
        { columns: ORDER_COLUMNS, key: ORDER_KEY, orderBy: ORDER_VERSION, batch: 'night' },
        ROWS_PER_FILE,
      ),
    );
  });
  const after = await filesUnder([target]);
  let bytesWritten = 0;
  for (const [p, size] of after) if (before.get(p) !== size) bytesWritten += size;
  await rm(target, { recursive: true, force: true });
  progress(
    `  ${secs(r.ms)}, CPU ${secs(r.cpuMs)}, peak RSS ${mib(r.peakRss.bytes)}, wrote ${mib(bytesWritten)}, ${count(r.value.rows)} rows`,
  );
  if (r.value.rows !== rows + night.inserts)
    throw new Error(
      `[bench] the reload wrote ${r.value.rows} rows, expected ${rows + night.inserts}`,
    );
  return {
    ms: r.ms,
    cpuMs: r.cpuMs,
    peakRssBytes: r.peakRss.bytes,
    bytesWritten,
    rows: r.value.rows,
  };
}

/** Default folder of the persistent tables. */
export const SEED_SCALE_DIR = join(BENCH_ROOT, 'seed-scale');
