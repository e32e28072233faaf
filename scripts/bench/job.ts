/**
 * Running tidemark's real job for the ingest benchmark, and a profile of where its time goes.
 *
 * `runOrdersJob` calls `runJob` exactly as the CLI does (config validated with defaults,
 * silent logger). `profileOrdersJob` replays the same steps as src/job/run-job.ts one by one
 * (snapshot, discover, fetch, load, dedupe, MERGE with the job state, next snapshot) with a lap
 * after each, because the run report has no phase timings. It is a replica: its total is
 * printed next to the real run's so any drift shows.
 */
import type { JobConfig } from '../../src/config/schema.js';
import { validateConfig } from '../../src/config/load.js';
import { DeltaTable } from '../../src/delta/table.js';
import { discover, nextStateFor, type DiscoveryState } from '../../src/discovery/index.js';
import { dedupeLatest } from '../../src/engine/dedupe.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { loadFiles, SOURCE_FILE, SOURCE_ROW } from '../../src/engine/load.js';
import { mergeIntoTable } from '../../src/engine/merge/index.js';
import { resolveFormat } from '../../src/engine/source-format.js';
import { splitBatches } from '../../src/job/batches.js';
import type { RunContext } from '../../src/job/context.js';
import { fetchFiles } from '../../src/job/fetch.js';
import { discoveryConfigOf, openSource, openTarget } from '../../src/job/open.js';
import type { RunReport } from '../../src/job/report.js';
import { runJob } from '../../src/job/run-job.js';
import { jobAppId, readJobState, stateActions, type JobState } from '../../src/job/state.js';
import { silentLogger } from '../../src/log/logger.js';
import { Laps, timed } from './clock.js';
import { slowest, traceSql, type SlowSql } from './sql-trace.js';

/** Where an orders job reads and writes. */
export interface OrdersJobSpec {
  name: string;
  /** Landing zone folder ({yyyy}/{mm}/{dd}). */
  source: string;
  /** Delta table folder. */
  target: string;
  maxFilesPerBatch?: number;
  /** Parent of the run's spool folder. */
  spoolRoot: string;
}

/** A validated job (all defaults applied) and its run context. */
export interface OrdersJob {
  job: JobConfig;
  ctx: RunContext;
}

/** The job as a user would configure it: by partition, MERGE on order_id, latest updated_at. */
export function ordersJob(spec: OrdersJobSpec): OrdersJob {
  const config = validateConfig({
    storage: { singleWriter: false },
    jobs: [
      {
        name: spec.name,
        source: { uri: spec.source, format: 'parquet', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: { uri: spec.target, mode: 'merge', key: ['order_id'], orderBy: 'updated_at' },
        ...(spec.maxFilesPerBatch === undefined ? {} : { maxFilesPerBatch: spec.maxFilesPerBatch }),
      },
    ],
  });
  const ctx: RunContext = { storage: config.storage, logger: silentLogger(), spoolRoot: spec.spoolRoot, tty: false };
  return { job: config.jobs[0]!, ctx };
}

/** One real run, timed (wall and process CPU). */
export async function runOrdersJob(j: OrdersJob): Promise<{ ms: number; cpuMs: number; report: RunReport }> {
  const { ms, cpuMs, value } = await timed(() => runJob(j.job, j.ctx));
  return { ms, cpuMs, report: value };
}

/** What-if knobs of the replay. */
export interface ReplayOptions {
  /** Rows per data file written by the MERGE; default the job's target.maxRowsPerFile, as the real job. */
  targetFileRows?: number;
}

/** Phase timings of one replayed run (ms); MERGE phases are prefixed `merge.`. */
export type JobPhases = Record<string, number>;

/** Replay one run step by step (see the module comment); returns phases and the total. */
export async function profileOrdersJob(j: OrdersJob, opts: ReplayOptions = {}): Promise<{ totalMs: number; phases: JobPhases }> {
  const { job, ctx } = j;
  const laps = new Laps();
  const session = await DuckSession.open();
  try {
    const table = DeltaTable.open(openTarget(job, ctx.storage), session, { singleWriter: ctx.storage.singleWriter });
    laps.lap('open');
    let snapshot = await table.snapshot();
    let state = readJobState(snapshot, job.name);
    laps.lap('snapshot');
    const source = openSource(job, ctx.storage);
    const plan = await discover(source, discoveryConfigOf(job), state.discovery as DiscoveryState | null, { concurrency: Math.min(job.concurrency, 16) });
    laps.lap('discover');
    const mergePhases: JobPhases = {};
    for (const files of splitBatches(plan.files, job.maxFilesPerBatch, job.maxBytesPerBatch)) {
      const fetched = await fetchFiles(source, files, { spoolDir: ctx.spoolRoot!, concurrency: job.concurrency });
      laps.lap('fetch');
      const loadList = fetched.map((f) => ({ localPath: f.localPath, key: f.file.key, lastModified: f.file.lastModified, format: resolveFormat(f.file.key, job.source.format) }));
      const rowsRead = await loadFiles(session, loadList, { table: 'tidemark_raw' });
      laps.lap('load');
      await dedupeLatest(session, { input: 'tidemark_raw', output: 'tidemark_batch', keyColumns: job.target.key!, orderBy: job.target.orderBy! });
      laps.lap('dedupe');
      const next: JobState = {
        ...state,
        batch: state.batch + 1,
        discovery: nextStateFor(state.discovery as DiscoveryState | null, plan, fetched.map((f) => ({ ...f.file, etag: f.etag }))),
        lastRunAt: new Date().toISOString(),
        totals: { filesLoaded: state.totals.filesLoaded + files.length, rowsLoaded: state.totals.rowsLoaded + rowsRead },
      };
      const merged = await mergeIntoTable({
        session,
        table,
        snapshot,
        batch: 'tidemark_batch',
        partitionBy: job.target.partitionBy,
        internalColumns: [SOURCE_ROW],
        sourceFileColumn: SOURCE_FILE,
        sourceRowColumn: SOURCE_ROW,
        appIds: [jobAppId(job.name)],
        extraActions: stateActions(next),
        concurrency: job.concurrency,
        keyColumns: job.target.key!,
        orderBy: job.target.orderBy!,
        keysUnique: true, // as src/job/write-batch.ts: the dedupe left one row per key
        targetFileRows: opts.targetFileRows ?? job.target.maxRowsPerFile,
      });
      laps.lap('merge');
      for (const [phase, ms] of Object.entries(merged.durations)) mergePhases[`merge.${phase}`] = (mergePhases[`merge.${phase}`] ?? 0) + ms;
      await session.run('DROP TABLE IF EXISTS tidemark_raw; DROP TABLE IF EXISTS tidemark_batch');
      snapshot = await table.snapshot();
      state = next;
      laps.lap('snapshot');
    }
    return { totalMs: laps.total(), phases: { ...laps.phases, ...mergePhases } };
  } finally {
    session.close();
  }
}

/** A replayed run's phases plus its slowest statements. */
export interface JobProfile {
  totalMs: number;
  phases: JobPhases;
  sql: SlowSql[];
}

/** `profileOrdersJob` with every statement traced; keeps the `top` slowest shapes. */
export async function tracedProfile(j: OrdersJob, opts: ReplayOptions = {}, top = 8): Promise<JobProfile> {
  const { value, statements } = await traceSql(() => profileOrdersJob(j, opts));
  return { ...value, sql: slowest(statements, top) };
}
