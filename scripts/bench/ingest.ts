/**
 * `npm run bench -- ingest` (issue 3 §6), on local files only:
 *
 *   (a) initial load: ~200 Parquet files, ~5M rows, ~2% duplicate keys — tidemark's job
 *       (runJob) vs a hand-written DuckDB pipeline (one COPY with the same dedupe). Target ≤ 1.5×.
 *   (b) incremental: 2 new files on the table of (a) vs a full reload of all files into a fresh
 *       table by the same job. Target ≤ 5%.
 *   (c) nothing new, on a table with 200 commits (a job with maxFilesPerBatch 1 over 200 tiny
 *       files). Target < 1 s.
 *
 * Correctness: (a) the table equals the hand-written output (row count and fingerprint of the
 * data columns); (b) the incremental table equals the full reload; (c) the no-op run commits
 * nothing. Phase breakdowns come from a step-by-step replica of the job (./job.ts).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { copyFolder, openWorkspace, type Workspace } from './workspace.js';
import { samplesOf, timed, type Samples } from './clock.js';
import { benchEnv, describeEnv } from './env.js';
import { parquetFingerprint, runHandwritten } from './handwritten.js';
import { ordersJob, profileOrdersJob, runOrdersJob, type JobPhases } from './job.js';
import { writeLanding, type LandingFile, type LandingSpec } from './landing.js';
import { ORDER_COLUMNS } from './orders.js';
import { fingerprint, type TableFingerprint } from './verify.js';
import { printTables, secs, writeJson } from './report.js';
import { progress, withSession } from './session.js';
import { INGEST_TARGETS, ingestTables } from './ingest-report.js';


/** Sizes of the benchmark; the defaults are the issue's. */
export interface IngestBenchOptions {
  rows: number;
  files: number;
  commits: number;
  /** Interleaved repetitions of (a) and (b); medians are reported. */
  repeat: number;
  keep: boolean;
  jsonPath: string;
  command: string;
}

const FILES_PER_DAY = 4;
const DUP_SHARE = 0.02;
const NEW_FILES = 2;
const NOOP_RUNS = 5;

type Report = Awaited<ReturnType<typeof runOrdersJob>>['report'];

/** (a) figures. */
export interface InitialResult {
  landingRows: number;
  handwritten: Samples;
  tidemark: Samples;
  /** median tidemark / median hand-written. */
  ratio: number;
  /** The same for process CPU time. */
  cpuRatio: number;
  report: Report;
  table: TableFingerprint;
  verified: boolean;
  profile: { totalMs: number; phases: JobPhases };
}

/** (b) figures. */
export interface IncrementalResult {
  newFiles: number;
  incremental: Samples;
  fullReload: Samples;
  /** median incremental / median full reload. */
  ratio: number;
  /** The same for process CPU time. */
  cpuRatio: number;
  report: Report;
  table: TableFingerprint;
  verified: boolean;
  profile: { totalMs: number; phases: JobPhases };
}

/** (c) figures. */
export interface NoopResult {
  commits: number;
  tableVersion: number | null;
  buildMs: number;
  runs: Samples;
  verified: boolean;
}

/** Run the benchmark, print its tables and write the JSON result. */
export async function benchIngest(opts: IngestBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('ingest', { keep: opts.keep });
  try {
    const spec: LandingSpec = {
      root: ws.path('landing'),
      startDay: '2026-01-01',
      files: opts.files,
      rowsPerFile: Math.ceil(opts.rows / opts.files),
      filesPerDay: FILES_PER_DAY,
      dupShare: DUP_SHARE,
    };
    const landing = await generate(spec);
    const initial = await benchInitial(ws, spec, landing, opts.repeat);
    const incremental = await benchIncremental(ws, spec, opts.repeat);
    const noop = await benchNoop(ws, opts.commits);
    printTables(ingestTables({ opts, spec, initial, incremental, noop }));
    await writeJson(opts.jsonPath, { benchmark: 'ingest', env, options: opts, landing: spec, targets: INGEST_TARGETS, initial, incremental, noop });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    if (!initial.verified || !incremental.verified || !noop.verified) throw new Error('[bench] ingest results failed verification');
  } finally {
    await ws.dispose();
  }
}

async function generate(spec: LandingSpec): Promise<LandingFile[]> {
  progress(`writing the landing zone: ${spec.files} files × ${spec.rowsPerFile.toLocaleString('en-US')} rows`);
  const { ms, value } = await timed(() => withSession((s) => writeLanding(s, spec)));
  progress(`  ${secs(ms)}`);
  return value;
}

/** The job of this benchmark into `target`. */
function job(ws: Workspace, spec: LandingSpec, target: string) {
  return ordersJob({ name: 'orders', source: spec.root, target: ws.path(target), spoolRoot: ws.dir });
}

/** (a) Hand-written pipeline and tidemark's first load, alternated; the last table stays as `table`. */
async function benchInitial(ws: Workspace, spec: LandingSpec, landing: readonly LandingFile[], repeat: number): Promise<InitialResult> {
  const out = ws.path('handwritten.parquet');
  const files = landing.map((f) => join(spec.root, ...f.key.split('/')));
  const hand: Array<{ ms: number; cpuMs: number }> = [];
  const runs: Array<{ ms: number; cpuMs: number; report: Report }> = [];
  for (let rep = 1; rep <= repeat; rep++) {
    progress(`(a ${rep}/${repeat}) hand-written DuckDB pipeline, tidemark job`);
    await rm(out, { force: true });
    await rm(ws.path('table'), { recursive: true, force: true });
    hand.push(await withSession((s) => timed(() => runHandwritten(s, { files, out, key: 'order_id', orderBy: 'updated_at' }))));
    runs.push(await runOrdersJob(job(ws, spec, 'table')));
    progress(`  ${secs(hand[hand.length - 1]!.ms)}, ${secs(runs[runs.length - 1]!.ms)}`);
  }
  const table = await withSession((s) => fingerprint(s, ws.path('table'), ORDER_COLUMNS));
  const expected = await withSession((s) => parquetFingerprint(s, out, ORDER_COLUMNS));
  progress('  phase profile');
  const profile = await profileOrdersJob(job(ws, spec, 'table-profile'));
  await rm(ws.path('table-profile'), { recursive: true, force: true });
  const report = runs[runs.length - 1]!.report;
  const [h, t] = [samplesOf(hand.map((r) => r.ms)), samplesOf(runs.map((r) => r.ms))];
  const cpu = [samplesOf(hand.map((r) => r.cpuMs)), samplesOf(runs.map((r) => r.cpuMs))] as const;
  return {
    landingRows: spec.files * spec.rowsPerFile,
    handwritten: h,
    tidemark: t,
    ratio: t.median / h.median,
    cpuRatio: cpu[1].median / cpu[0].median,
    report,
    table,
    verified: report.status === 'succeeded' && table.rows === expected.rows && table.hash === expected.hash,
    profile,
  };
}

/** (b) New files on copies of the (a) table, alternated with full reloads into fresh tables. */
async function benchIncremental(ws: Workspace, spec: LandingSpec, repeat: number): Promise<IncrementalResult> {
  await withSession((s) => writeLanding(s, { ...spec, files: NEW_FILES, firstFile: spec.files }));
  const inc: Array<{ ms: number; cpuMs: number; report: Report }> = [];
  const reload: Array<{ ms: number; cpuMs: number }> = [];
  for (let rep = 1; rep <= repeat; rep++) {
    progress(`(b ${rep}/${repeat}) incremental run with ${NEW_FILES} new files, full reload of ${spec.files + NEW_FILES} files`);
    await Promise.all(['inc', 'reload'].map((d) => rm(ws.path(d), { recursive: true, force: true })));
    await copyFolder(ws.path('table'), ws.path('inc'));
    inc.push(await runOrdersJob(job(ws, spec, 'inc')));
    reload.push(await runOrdersJob(job(ws, spec, 'reload')));
    progress(`  ${secs(inc[inc.length - 1]!.ms)}, ${secs(reload[reload.length - 1]!.ms)}`);
  }
  const table = await withSession((s) => fingerprint(s, ws.path('inc'), ORDER_COLUMNS));
  const expected = await withSession((s) => fingerprint(s, ws.path('reload'), ORDER_COLUMNS));
  progress('  phase profile');
  await copyFolder(ws.path('table'), ws.path('inc-profile'));
  const profile = await profileOrdersJob(job(ws, spec, 'inc-profile'));
  const report = inc[inc.length - 1]!.report;
  const [i, r] = [samplesOf(inc.map((x) => x.ms)), samplesOf(reload.map((x) => x.ms))];
  const cpu = [samplesOf(inc.map((x) => x.cpuMs)), samplesOf(reload.map((x) => x.cpuMs))] as const;
  return {
    newFiles: NEW_FILES,
    incremental: i,
    fullReload: r,
    ratio: i.median / r.median,
    cpuRatio: cpu[0].median / cpu[1].median,
    report,
    table,
    verified: report.filesLoaded === NEW_FILES && table.rows === expected.rows && table.hash === expected.hash,
    profile,
  };
}

async function benchNoop(ws: Workspace, commits: number): Promise<NoopResult> {
  const spec: LandingSpec = { root: ws.path('tiny'), startDay: '2025-01-01', files: commits, rowsPerFile: 50, filesPerDay: FILES_PER_DAY, dupShare: DUP_SHARE };
  await withSession((s) => writeLanding(s, spec));
  const tiny = ordersJob({ name: 'tiny', source: spec.root, target: ws.path('table-commits'), maxFilesPerBatch: 1, spoolRoot: ws.dir });
  progress(`(c) building a table with ${commits} commits (one file per batch)`);
  const built = await runOrdersJob(tiny);
  progress(`  ${secs(built.ms)}; ${NOOP_RUNS} runs with nothing new`);
  const runs = [];
  for (let i = 0; i < NOOP_RUNS; i++) runs.push(await runOrdersJob(tiny));
  const version = built.report.tableVersion;
  return {
    commits: built.report.commits,
    tableVersion: version,
    buildMs: built.ms,
    runs: samplesOf(runs.map((r) => r.ms)),
    verified: built.report.commits === commits && runs.every((r) => r.report.status === 'nothing-new' && r.report.commits === 0 && r.report.tableVersion === version),
  };
}



