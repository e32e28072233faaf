/**
 * `npm run bench -- memory`: one batch several times larger than DuckDB's memory limit, loaded by
 * the real job (`runJob`, MERGE on order_id, latest updated_at) with `engine.memoryLimit` set to
 * each of a few limits, and without a limit as the baseline, in the same run.
 *
 * Each load runs in a child process (`npm run bench -- memory-run …`, under `/usr/bin/time -v`
 * when present), so its peak RSS is the kernel's figure for that load alone: Node, DuckDB and its
 * spilling included. The child also reports `process.resourceUsage().maxRSS` at exit (the
 * fallback without /usr/bin/time). Every table is checked against the landing: row count and an
 * order-free hash of the latest row per key, computed by DuckDB straight from the files.
 */
import { capture } from '../lib/capture.js';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';
import { samplesOf, timed } from './clock.js';
import { benchEnv, describeEnv, watchOtherLoad } from './env.js';
import { ordersJob, runOrdersJob } from './job.js';
import { count, mib, printTables, secs, times, writeJson, type TextTable } from './report.js';
import { progress, withSession } from './session.js';
import { fingerprint } from './verify.js';
import { openWorkspace } from './workspace.js';

/** Options of the benchmark. */
export interface MemoryBenchOptions {
  rows: number;
  files: number;
  /** Memory limits in bytes; the unlimited baseline always runs first. */
  limits: number[];
  /** Interleaved repetitions of every load; medians reported. */
  repeat: number;
  keep: boolean;
  jsonPath: string;
  command: string;
}

/** Columns of the landing, the table's data columns (the job adds lineage columns). */
const COLUMNS = [
  'order_id',
  'customer_id',
  'status',
  'amount',
  'updated_at',
  'note_1',
  'note_2',
  'note_3',
  'note_4',
  'note_5',
  'note_6',
];
/** Share of rows repeating an earlier order with a later updated_at (the dedupe has work). */
const DUP_SHARE = 0.02;
/** All files go in one batch: far more than the landing's files and bytes. */
const ONE_BATCH = { maxFilesPerBatch: 100_000, maxBytesPerBatch: 1024 ** 4 };
const TIME_BINARY = '/usr/bin/time';

/** What one load in a child process reports. */
interface ChildResult {
  ms: number;
  cpuMs: number;
  /** `process.resourceUsage().maxRSS` at exit, KiB. */
  maxRssKiB: number;
  status: string;
  rowsRead: number;
  rowsAfterDedupe: number;
  commits: number;
  error?: string;
}

/** One load, measured from outside. */
interface LoadSample extends ChildResult {
  /** Peak RSS in bytes (/usr/bin/time's, else the child's own). */
  peakRss: number;
  peakRssSource: 'time -v' | 'resourceUsage';
  /** Largest size of the run's spool folder seen (DuckDB's spill files, files being written). */
  peakSpool: number;
  tableRows: number | null;
  verified: boolean;
}

/** The loads of one memory limit, summarised. */
interface LoadResult {
  /** Memory limit in bytes; null: unlimited (DuckDB's default, 80 % of RAM). */
  limit: number | null;
  samples: LoadSample[];
  /** Medians of wall and CPU time; the largest peak RSS and spool. */
  ms: number;
  cpuMs: number;
  peakRss: number;
  peakSpool: number;
  /** Median wall (CPU) time / the unlimited load's. */
  ratio: number;
  cpuRatio: number;
  tableRows: number | null;
  verified: boolean;
  error?: string;
}

/** Run the benchmark, print its table and write the JSON result. */
export async function benchMemory(opts: MemoryBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('memory', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  try {
    const landing = ws.path('landing');
    progress(
      `writing the landing zone: ${opts.files} Parquet files, ${count(opts.rows)} wide rows`,
    );
    const written = await timed(() => withSession((s) => writeWideLanding(s, landing, opts)));
    progress(
      `  ${secs(written.ms)}; ${mib(written.value.duckBytes)} in DuckDB, ${mib(written.value.fileBytes)} of Parquet`,
    );
    const expected = await withSession((s) => landingFingerprint(s, landing));

    // Interleaved, so a burst of other work on the machine spreads over all limits.
    const limits = [null, ...opts.limits];
    const samples = new Map<number | null, LoadSample[]>(limits.map((l) => [l, []]));
    for (let rep = 1; rep <= opts.repeat; rep++) {
      for (const limit of limits) {
        progress(
          `(${rep}/${opts.repeat}) loading with memory limit ${limit === null ? 'unlimited' : mib(limit)}`,
        );
        const target = ws.path('table');
        const child = await runChild({ landing, target, spoolRoot: ws.path('spool'), limit });
        const table =
          child.status === 'succeeded'
            ? await withSession((s) => fingerprint(s, target, COLUMNS))
            : null;
        await rm(target, { recursive: true, force: true });
        const verified =
          table !== null && table.rows === expected.rows && table.hash === expected.hash;
        samples.get(limit)!.push({ ...child, tableRows: table?.rows ?? null, verified });
        progress(
          `  ${secs(child.ms)}, CPU ${secs(child.cpuMs)}, peak RSS ${mib(child.peakRss)}, spool ${mib(child.peakSpool)}${child.error ? `, FAILED: ${child.error}` : ''}`,
        );
      }
    }
    const baseline = summarise(null, samples.get(null)!, null);
    const loads = limits.map((limit) =>
      limit === null ? baseline : summarise(limit, samples.get(limit)!, baseline),
    );
    const childCpuSeconds = [...samples.values()].flat().reduce((n, l) => n + l.cpuMs / 1000, 0);
    const otherLoad = stopWatch();
    printTables([memoryTable(opts, written.value, loads)]);
    for (const l of loads.filter((x) => x.error))
      process.stdout.write(`${l.limit === null ? 'unlimited' : mib(l.limit)} failed: ${l.error}\n`);
    // The children's CPU is not this process's, so watchOtherLoad counts it as others': take it out.
    const othersShare =
      otherLoad === null
        ? null
        : otherLoad.cpuSeconds === 0
          ? 0
          : (Math.max(0, otherLoad.cpuSeconds - childCpuSeconds) / otherLoad.cpuSeconds) *
            otherLoad.share;
    if (othersShare !== null)
      process.stdout.write(
        `other processes used ${(othersShare * 100).toFixed(0)} % of the machine's CPU time during the benchmark\n`,
      );
    await writeJson(opts.jsonPath, {
      benchmark: 'memory',
      env,
      options: opts,
      landing: written.value,
      expected,
      loads,
      otherLoadShare: othersShare,
    });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    if (!loads.every((l) => l.verified))
      throw new Error('[bench] memory: a load failed or its table differs from the landing');
  } finally {
    await ws.dispose();
  }
}

/** Medians of the times, the worst peaks; ratios against the baseline's medians (1 for the baseline). */
function summarise(
  limit: number | null,
  samples: LoadSample[],
  baseline: LoadResult | null,
): LoadResult {
  const ms = samplesOf(samples.map((x) => x.ms)).median;
  const cpuMs = samplesOf(samples.map((x) => x.cpuMs)).median;
  const error = samples.find((x) => x.error)?.error;
  return {
    limit,
    samples,
    ms,
    cpuMs,
    peakRss: Math.max(...samples.map((x) => x.peakRss)),
    peakSpool: Math.max(...samples.map((x) => x.peakSpool)),
    ratio: baseline ? ms / baseline.ms : 1,
    cpuRatio: baseline ? cpuMs / baseline.cpuMs : 1,
    tableRows: samples[0]?.tableRows ?? null,
    verified: samples.every((x) => x.verified),
    ...(error ? { error } : {}),
  };
}

/** Sizes of the landing written. */
interface WrittenLanding {
  rows: number;
  /** The rows as a DuckDB table (its in-memory blocks), what one batch holds. */
  duckBytes: number;
  /** Parquet on disk. */
  fileBytes: number;
}

/**
 * `files` Parquet files of wide order rows in one day folder (one batch). Six 32-character notes
 * per row (md5 text: incompressible in memory) make a row about 300 bytes in DuckDB.
 */
async function writeWideLanding(
  session: DuckSession,
  root: string,
  opts: MemoryBenchOptions,
): Promise<WrittenLanding> {
  const perFile = Math.ceil(opts.rows / opts.files);
  const dups = Math.round(perFile * DUP_SHARE);
  const day = join(root, '2026', '01', '01');
  await mkdir(day, { recursive: true });
  for (let f = 0; f < opts.files; f++) {
    const fresh = `SELECT (${f * perFile} + j)::BIGINT AS order_id, 0 AS later FROM range(1, ${perFile - dups + 1}) AS r(j)`;
    // Repeats of orders of this file or earlier ones, an hour later.
    const repeats = `SELECT (1 + hash(${f}, j) % ${(f + 1) * perFile - dups})::BIGINT AS order_id, j AS later FROM range(1, ${dups + 1}) AS r(j)`;
    const notes = [1, 2, 3, 4, 5, 6]
      .map((n) => `md5(concat(order_id, '/', later, '/${n}')) AS note_${n}`)
      .join(', ');
    const sql =
      `SELECT order_id, (hash(order_id) % 500000 + 1)::BIGINT AS customer_id, ` +
      `(['new', 'paid', 'shipped', 'delivered'])[(hash(order_id, later) % 4 + 1)::INTEGER] AS status, ` +
      `((hash(order_id * 13 + later) % 100000)::DECIMAL(12, 2) / 100)::DECIMAL(12, 2) AS amount, ` +
      `TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_milliseconds(order_id) + to_hours(later::BIGINT) AS updated_at, ${notes} ` +
      `FROM (${fresh} UNION ALL ${repeats})`;
    await session.run(
      `COPY (${sql}) TO ${str(join(day, `orders-${String(f).padStart(4, '0')}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`,
    );
  }
  const glob = str(join(root, '**', '*.parquet'));
  await session.run(`CREATE TEMP TABLE landed AS SELECT * FROM read_parquet(${glob})`);
  const sizes = await session.one(
    `SELECT (SELECT count(*) FROM landed)::BIGINT AS n, ` +
      `(SELECT sum(estimated_size)::BIGINT FROM duckdb_tables() WHERE table_name = 'landed') AS est, ` +
      `(SELECT sum(total_compressed_size)::BIGINT FROM parquet_metadata(${glob})) AS disk`,
  );
  // duckdb_tables().estimated_size counts rows only; measure the blocks the table holds instead.
  const used = await session.one(
    `SELECT sum(memory_usage_bytes)::BIGINT AS b FROM duckdb_memory() WHERE tag IN ('IN_MEMORY_TABLE', 'OVERFLOW_STRINGS')`,
  );
  await session.run('DROP TABLE landed');
  return {
    rows: Number(sizes?.['n'] ?? 0),
    duckBytes: Number(used?.['b'] ?? sizes?.['est'] ?? 0),
    fileBytes: Number(sizes?.['disk'] ?? 0),
  };
}

/** Row count and hash of the latest row per order, straight from the landing's files. */
async function landingFingerprint(
  session: DuckSession,
  root: string,
): Promise<{ rows: number; hash: string }> {
  const latest = `SELECT * FROM read_parquet(${str(join(root, '**', '*.parquet'))}) QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY updated_at DESC) = 1`;
  const row = await session.one(
    `SELECT count(*)::BIGINT AS n, sum(hash(${COLUMNS.map(ident).join(', ')}))::VARCHAR AS h FROM (${latest})`,
  );
  return { rows: Number(row?.['n'] ?? 0), hash: String(row?.['h'] ?? '') };
}

/** What a child process loads. */
interface ChildSpec {
  landing: string;
  target: string;
  spoolRoot: string;
  /** Bytes; null: no limit. */
  limit: number | null;
}

/** Load in a child process (this script again, `memory-run`), measured by /usr/bin/time -v when present. */
async function runChild(spec: ChildSpec): Promise<Omit<LoadSample, 'tableRows' | 'verified'>> {
  const script = process.argv[1];
  if (!script) throw new Error('[bench] memory: cannot tell which script to run in the child');
  const args = [
    ...process.execArgv,
    script,
    'memory-run',
    '--landing',
    spec.landing,
    '--target',
    spec.target,
    '--spool',
    spec.spoolRoot,
    ...(spec.limit === null ? [] : ['--limit', String(spec.limit)]),
  ];
  const useTime = existsSync(TIME_BINARY);
  const [command, argv] = useTime
    ? [TIME_BINARY, ['-v', process.execPath, ...args]]
    : [process.execPath, args];
  await mkdir(spec.spoolRoot, { recursive: true });
  const spool = watchFolderSize(spec.spoolRoot);
  const { code, stdout, stderr } = await capture(command, argv).finally(() => spool.stop());
  const line = stdout.trimEnd().split('\n').at(-1) ?? '';
  let result: ChildResult;
  try {
    result = JSON.parse(line) as ChildResult;
  } catch {
    throw new Error(
      `[bench] memory: the child exited ${code} without a result\n${stderr.slice(-4000)}`,
    );
  }
  const timeKiB = useTime
    ? /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1]
    : undefined;
  const peakSpool = spool.peak();
  return timeKiB === undefined
    ? { ...result, peakSpool, peakRss: result.maxRssKiB * 1024, peakRssSource: 'resourceUsage' }
    : { ...result, peakSpool, peakRss: Number(timeKiB) * 1024, peakRssSource: 'time -v' };
}

/** Poll a folder's total file size every half second; the largest seen. */
function watchFolderSize(dir: string): { stop(): void; peak(): number } {
  let peak = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void folderBytes(dir)
      .then((n) => void (peak = Math.max(peak, n)))
      .finally(() => (busy = false));
  }, 500);
  return { stop: () => clearInterval(timer), peak: () => peak };
}

async function folderBytes(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  let total = 0;
  for (const e of entries) {
    if (!e.isFile()) continue;
    // Spill files come and go while the child works.
    total += await stat(join(e.parentPath, e.name)).then(
      (st) => st.size,
      () => 0,
    );
  }
  return total;
}

/** `memory-run`: the child's side. One real run of the job; prints its figures as one JSON line. */
export async function memoryRun(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      landing: { type: 'string' },
      target: { type: 'string' },
      spool: { type: 'string' },
      limit: { type: 'string' },
    },
  });
  if (!values.landing || !values.target || !values.spool)
    throw new Error('[bench] memory-run needs --landing, --target and --spool');
  const j = ordersJob({
    name: 'wide',
    source: values.landing,
    target: values.target,
    spoolRoot: values.spool,
    ...ONE_BATCH,
  });
  // As the CLI passes the config's `engine`; threads left to DuckDB (one per core), like the default config.
  if (values.limit) j.ctx.engine = { memoryLimit: Number(values.limit) };
  let result: ChildResult;
  try {
    const { ms, cpuMs, report } = await runOrdersJob(j);
    const { status, rowsRead, rowsAfterDedupe, commits } = report;
    result = { ms, cpuMs, maxRssKiB: 0, status, rowsRead, rowsAfterDedupe, commits };
  } catch (err) {
    result = {
      ms: 0,
      cpuMs: 0,
      maxRssKiB: 0,
      status: 'failed',
      rowsRead: 0,
      rowsAfterDedupe: 0,
      commits: 0,
      error: (err instanceof Error ? err.message : String(err)).split('\n')[0],
    };
  }
  result.maxRssKiB = process.resourceUsage().maxRSS;
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function memoryTable(
  opts: MemoryBenchOptions,
  landing: WrittenLanding,
  loads: readonly LoadResult[],
): TextTable {
  return {
    title:
      `One batch of ${count(landing.rows)} wide rows (${mib(landing.duckBytes)} as a DuckDB table, ${mib(landing.fileBytes)} of Parquet in ${opts.files} files), ` +
      `loaded by the job in one commit (MERGE creating the table), ${cpus().length} DuckDB threads; medians of ${opts.repeat}`,
    header: [
      'engine.memoryLimit',
      'batch / limit',
      'time',
      'vs unlimited',
      'CPU',
      'vs unlimited',
      'peak RSS',
      'peak spool',
      'rows',
      'verified',
    ],
    rows: loads.map((l) => [
      l.limit === null ? 'unlimited (DuckDB: 80 % of RAM)' : mib(l.limit),
      l.limit === null ? '-' : times(landing.duckBytes / l.limit),
      l.error ? 'failed' : secs(l.ms),
      l.error ? '-' : times(l.ratio),
      l.error ? '-' : secs(l.cpuMs),
      l.error ? '-' : times(l.cpuRatio),
      mib(l.peakRss),
      mib(l.peakSpool),
      l.tableRows === null ? '-' : count(l.tableRows),
      l.verified ? 'yes' : 'NO',
    ]),
  };
}
