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
import { join } from 'node:path';
import { copyFolder, openWorkspace, type Workspace } from './workspace.js';
import { timed } from './clock.js';
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
  keep: boolean;
  jsonPath: string;
  command: string;
}

const FILES_PER_DAY = 4;
const DUP_SHARE = 0.02;
const NOOP_RUNS = 5;

/** (a) figures. */
export interface InitialResult {
  landingRows: number;
  handwrittenMs: number;
  tidemarkMs: number;
  ratio: number;
  report: Awaited<ReturnType<typeof runOrdersJob>>['report'];
  table: TableFingerprint;
  verified: boolean;
  profile: { totalMs: number; phases: JobPhases };
}

/** (b) figures. */
export interface IncrementalResult {
  newFiles: number;
  incrementalMs: number;
  fullReloadMs: number;
  ratio: number;
  report: InitialResult['report'];
  table: TableFingerprint;
  verified: boolean;
  profile: { totalMs: number; phases: JobPhases };
}

/** (c) figures. */
export interface NoopResult {
  commits: number;
  tableVersion: number | null;
  buildMs: number;
  runsMs: number[];
  medianMs: number;
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
    const initial = await benchInitial(ws, spec, landing);
    const incremental = await benchIncremental(ws, spec);
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
  progress(`  ${(ms / 1000).toFixed(1)} s`);
  return value;
}

async function benchInitial(ws: Workspace, spec: LandingSpec, landing: readonly LandingFile[]): Promise<InitialResult> {
  const out = ws.path('handwritten.parquet');
  const files = landing.map((f) => join(spec.root, ...f.key.split('/')));
  progress('(a) hand-written DuckDB pipeline');
  const hand = await withSession((s) => timed(() => runHandwritten(s, { files, out, key: 'order_id', orderBy: 'updated_at' })));
  progress(`  ${secs(hand.ms)}; tidemark job`);
  const run = await runOrdersJob(ordersJob({ name: 'orders', source: spec.root, target: ws.path('table'), spoolRoot: ws.dir }));
  progress(`  ${secs(run.ms)}; verifying, then the phase profile`);
  const table = await withSession((s) => fingerprint(s, ws.path('table'), ORDER_COLUMNS));
  const expected = await withSession((s) => parquetFingerprint(s, out, ORDER_COLUMNS));
  const profile = await profileOrdersJob(ordersJob({ name: 'orders', source: spec.root, target: ws.path('table-profile'), spoolRoot: ws.dir }));
  return {
    landingRows: spec.files * spec.rowsPerFile,
    handwrittenMs: hand.ms,
    tidemarkMs: run.ms,
    ratio: run.ms / hand.ms,
    report: run.report,
    table,
    verified: run.report.status === 'succeeded' && table.rows === expected.rows && table.hash === expected.hash,
    profile,
  };
}

async function benchIncremental(ws: Workspace, spec: LandingSpec): Promise<IncrementalResult> {
  const newFiles = 2;
  await copyFolder(ws.path('table'), ws.path('table-inc-profile'));
  await withSession((s) => writeLanding(s, { ...spec, files: newFiles, firstFile: spec.files }));
  progress(`(b) incremental run with ${newFiles} new files`);
  const run = await runOrdersJob(ordersJob({ name: 'orders', source: spec.root, target: ws.path('table'), spoolRoot: ws.dir }));
  progress(`  ${secs(run.ms)}; full reload of ${spec.files + newFiles} files`);
  const reload = await runOrdersJob(ordersJob({ name: 'orders', source: spec.root, target: ws.path('table-reload'), spoolRoot: ws.dir }));
  progress(`  ${secs(reload.ms)}; verifying, then the phase profile`);
  const table = await withSession((s) => fingerprint(s, ws.path('table'), ORDER_COLUMNS));
  const expected = await withSession((s) => fingerprint(s, ws.path('table-reload'), ORDER_COLUMNS));
  const profile = await profileOrdersJob(ordersJob({ name: 'orders', source: spec.root, target: ws.path('table-inc-profile'), spoolRoot: ws.dir }));
  return {
    newFiles,
    incrementalMs: run.ms,
    fullReloadMs: reload.ms,
    ratio: run.ms / reload.ms,
    report: run.report,
    table,
    verified: run.report.filesLoaded === newFiles && table.rows === expected.rows && table.hash === expected.hash,
    profile,
  };
}

async function benchNoop(ws: Workspace, commits: number): Promise<NoopResult> {
  const spec: LandingSpec = { root: ws.path('tiny'), startDay: '2025-01-01', files: commits, rowsPerFile: 50, filesPerDay: FILES_PER_DAY, dupShare: DUP_SHARE };
  await withSession((s) => writeLanding(s, spec));
  const job = ordersJob({ name: 'tiny', source: spec.root, target: ws.path('table-commits'), maxFilesPerBatch: 1, spoolRoot: ws.dir });
  progress(`(c) building a table with ${commits} commits (one file per batch)`);
  const built = await runOrdersJob(job);
  progress(`  ${secs(built.ms)}; ${NOOP_RUNS} runs with nothing new`);
  const runs = [];
  for (let i = 0; i < NOOP_RUNS; i++) runs.push(await runOrdersJob(job));
  const runsMs = runs.map((r) => r.ms);
  const version = built.report.tableVersion;
  return {
    commits: built.report.commits,
    tableVersion: version,
    buildMs: built.ms,
    runsMs,
    medianMs: [...runsMs].sort((a, b) => a - b)[Math.floor(runsMs.length / 2)]!,
    verified: built.report.commits === commits && runs.every((r) => r.report.status === 'nothing-new' && r.report.commits === 0 && r.report.tableVersion === version),
  };
}



