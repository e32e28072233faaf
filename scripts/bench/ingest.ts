/**
 * `npm run bench -- ingest` (docs/benchmarks.md), on local files only:
 *
 *   (a) initial load: ~200 Parquet files, ~5M rows, ~2% duplicate keys — tidemark's job
 *       (runJob) vs a hand-written DuckDB pipeline (one COPY with the same dedupe). Target ≤ 1.5×.
 *   (b) incremental: 2 new files on the table of (a) vs a full reload of all files into a fresh
 *       table by the same job. Target ≤ 5%. Plus a reference, the least copy-on-write work for the
 *       same files by hand (./cow-floor.ts), and a what-if: the same incremental run had the
 *       loads written files of N rows (replica of the job with `targetFileRows`).
 *   (c) nothing new, on a table with 200 commits (a job with maxFilesPerBatch 1 over 200 tiny
 *       files). Target < 1 s.
 *   (d) what checksums cost: (a)'s load from and to S3 on the embedded server, with the default
 *       checks and without (./ingest-checksums.ts). Target: under 10 % of the load.
 *
 * Correctness: (a) the table equals the hand-written output (row count and fingerprint of the
 * data columns); (b) the incremental table equals the full reload; (c) the no-op runs commit
 * nothing; (d) both S3 tables equal (a)'s, and the checks were made (or not). Phase breakdowns and the slowest SQL come from one more real run of the job, its
 * statements traced (./sql-trace.ts).
 */
import type { Samples } from './clock.js';
import { samplesOf, timed } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import { benchChecksums } from './ingest-checksums.js';
import { INGEST_TARGETS, ingestTables } from './ingest-report.js';
import { benchIncremental, benchInitial } from './ingest-steps.js';
import { ordersJob, runOrdersJob } from './job.js';
import { writeLanding, type LandingFile, type LandingSpec } from './landing.js';
import { printTables, secs, writeJson } from './report.js';
import { progress, withSession } from './session.js';
import { openWorkspace, type Workspace } from './workspace.js';

export type { IncrementalResult, InitialResult } from './ingest-steps.js';
export type { ChecksumResult } from './ingest-checksums.js';

/** Sizes of the benchmark; the defaults are the issue's. */
export interface IngestBenchOptions {
  rows: number;
  files: number;
  commits: number;
  /** Interleaved repetitions of (a) and (b); medians are reported. */
  repeat: number;
  /** Rows per file of the what-if in (b); 0 skips it. */
  whatIfRows: number;
  keep: boolean;
  jsonPath: string;
  command: string;
}

/** What the baselines are, printed under the tables. */
const INGEST_LEGEND = [
  'tidemark: runJob with a validated config (discover by partition {yyyy}/{mm}/{dd}, MERGE on order_id, latest updated_at), local files, silent logger.',
  'hand-written: one DuckDB COPY reading every file, QUALIFY row_number() per order_id by updated_at DESC = 1, one zstd Parquet file',
  '  (no lineage columns, no sort by key, no file stats, no Delta log or state).',
  'full reload: the same job loading every file into a fresh table. what-if: the job replica passing targetFileRows to the MERGE.',
  'floor: hand-written DuckDB doing only the copy-on-write work of (b): dedupe the new files, rewrite the data files holding their keys,',
  '  write the new keys (no Delta log, stats, state or checks): the least a copy-on-write MERGE must do. With deletion',
  '  vectors (the default for a table the job creates) (b) marks the updated rows instead of rewriting their file.',
  '(d): the job of (a) from an S3 landing zone into an S3 table on the embedded S3 server (loopback): checks on (uploads carry a CRC64NVME',
  '  the store verifies, downloads hashed against their ETag as MD5) against uploadChecksum off and etagChecksum false.',
].join('\n');

const FILES_PER_DAY = 4;
const DUP_SHARE = 0.02;
const NOOP_RUNS = 5;

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
  const stopWatch = watchOtherLoad();
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
    const checksums = await benchChecksums(ws, spec, opts.repeat, initial.table);
    const incremental = await benchIncremental(ws, spec, {
      repeat: opts.repeat,
      whatIfRows: opts.whatIfRows,
    });
    const noop = await benchNoop(ws, opts.commits);
    const otherLoad = stopWatch();
    printTables(ingestTables({ opts, spec, initial, incremental, noop, checksums }));
    process.stdout.write(`${INGEST_LEGEND}\n${describeOtherLoad(otherLoad)}`);
    await writeJson(opts.jsonPath, {
      benchmark: 'ingest',
      env,
      otherLoad,
      options: opts,
      landing: spec,
      targets: INGEST_TARGETS,
      initial,
      incremental,
      noop,
      checksums,
    });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    if (
      !initial.verified ||
      !incremental.verified ||
      !incremental.floor.verified ||
      !noop.verified ||
      !checksums.verified
    )
      throw new Error('[bench] ingest results failed verification');
  } finally {
    await ws.dispose();
  }
}

async function generate(spec: LandingSpec): Promise<LandingFile[]> {
  progress(
    `writing the landing zone: ${spec.files} files × ${spec.rowsPerFile.toLocaleString('en-US')} rows`,
  );
  const { ms, value } = await timed(() => withSession((s) => writeLanding(s, spec)));
  progress(`  ${secs(ms)}`);
  return value;
}

/** (c) A table of `commits` commits (one tiny file per batch), then runs that find nothing new. */
async function benchNoop(ws: Workspace, commits: number): Promise<NoopResult> {
  const spec: LandingSpec = {
    root: ws.path('tiny'),
    startDay: '2025-01-01',
    files: commits,
    rowsPerFile: 50,
    filesPerDay: FILES_PER_DAY,
    dupShare: DUP_SHARE,
  };
  await withSession((s) => writeLanding(s, spec));
  const tiny = ordersJob({
    name: 'tiny',
    source: spec.root,
    target: ws.path('table-commits'),
    maxFilesPerBatch: 1,
    spoolRoot: ws.dir,
  });
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
    verified:
      built.report.commits === commits &&
      runs.every(
        (r) =>
          r.report.status === 'nothing-new' &&
          r.report.commits === 0 &&
          r.report.tableVersion === version,
      ),
  };
}
