/**
 * `npm run bench -- merge` (docs/benchmarks.md): MERGE of 10,000 changed orders into a 10-million-row
 * table of ~100 files clustered by order_id, against the same change done as a full rewrite.
 *
 *   base table (tidemark's create path)  ──copy──►  MERGE (stageMerge + commit)
 *                                        ──copy──►  full rewrite (read all, upsert, tidemark writer, overwrite commit)
 *                                        ──copy──►  lean COPY (one DuckDB COPY, no stats/commit: lower bound)
 *   for two change batches: among the newest 1% of orders (targets apply), and scattered over all.
 *
 * Each step gets its own copy of the base table and its own DuckDB session. Correctness: the
 * MERGE result and the full rewrite have the same row count and row fingerprint, the count is
 * the base plus the inserts, and sampled batch keys read back with the batch's values.
 */
import type { DeltaTable } from '../../src/delta/table.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import type { DeletionVectorSetting } from '../../src/engine/merge/write-mode.js';
import { mergeAndCommit, openTable as openAt, type CommittedMerge } from '../lib/tables.js';
import { LocalStorage } from '../../src/storage/local.js';
import { rm } from 'node:fs/promises';
import { samplesOf, timed, type Samples } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import { fullRewrite, leanCopy, type RewriteResult, type UpsertSpec } from './full-rewrite.js';
import {
  ORDER_COLUMNS,
  ORDER_KEY,
  ORDER_VERSION,
  createChangeBatch,
  createOrdersTable,
  type ChangeSpec,
  type ChangeSpread,
} from './orders.js';
import { mergeTables } from './merge-report.js';
import type { PeakRss } from './peak-rss.js';
import { count, mib, printTables, secs, writeJson } from './report.js';
import { fingerprint, sampledMismatches, type TableFingerprint } from './verify.js';
import { progress, withSession } from './session.js';
import { slowest, statementListing, traceSql, type SlowSql, type TracedSql } from './sql-trace.js';
import { copyFolder, openWorkspace, type Workspace } from './workspace.js';

/** Statements kept per traced step. */
const SQL_TOP = 8;

/** What the baselines are, printed under the tables. */
const MERGE_LEGEND = [
  'full rewrite: read every live file with DuckDB, upsert the batch in SQL (incoming wins when not older), sort by order_id,',
  "  write through tidemark's writeDataFiles (same rows per file, stats, zstd) and commit an overwrite (remove all, add all).",
  'lean COPY: the same upsert and sort as one DuckDB COPY into files of the same row count, no stats, no Delta commit (a lower bound).',
].join('\n');

/**
 * The MERGE targets (docs/benchmarks.md): time and bytes written as a share of the full
 * rewrite and of the table. Scattered changes are held to 15 % of the rewrite's time, and to
 * 10 % at the seed scale model (50M rows) or above, where peak memory is bounded too.
 */
export const MERGE_TARGETS = {
  newest: { timeRatio: 0.05, bytesRatio: 0.03 },
  scattered: { timeRatio: 0.15, bytesRatio: 0.03 },
  scatteredAtScale: { rows: 50_000_000, timeRatio: 0.1 },
  peakRssBytes: 4 * 2 ** 30,
} as const;

/** The time target of a variant at this table size. */
export function timeTarget(spread: ChangeSpread, rows: number): number {
  if (spread === 'newest') return MERGE_TARGETS.newest.timeRatio;
  return rows >= MERGE_TARGETS.scatteredAtScale.rows
    ? MERGE_TARGETS.scatteredAtScale.timeRatio
    : MERGE_TARGETS.scattered.timeRatio;
}

/** Sizes of the benchmark; the defaults are the issue's. */
export interface MergeBenchOptions {
  rows: number;
  files: number;
  /** Changed rows per batch (updates + inserts). */
  changes: number;
  /** Share of the changes that are new orders. */
  insertShare: number;
  /** Also time the lean COPY lower bound (unpartitioned tables only). */
  lean: boolean;
  /** Partition columns of the base table (none: unpartitioned). */
  partitionBy: string[];
  /** The MERGE's `target.deletionVectors` (auto: the table's setting; tables tidemark creates have them). */
  deletionVectors: DeletionVectorSetting;
  /** Interleaved repetitions of each measurement (medians are reported). */
  repeat: number;
  /** Print every statement of the last MERGE of each variant, in order, with its time. */
  trace: boolean;
  keep: boolean;
  jsonPath: string;
  command: string;
}

/** One change batch's figures; times are medians over the repetitions. */
export interface VariantResult {
  spread: ChangeSpread;
  batch: ChangeSpec;
  merge: Samples;
  rewrite: Samples;
  lean: Samples | null;
  /** The last repetition's MERGE result and full rewrite phases. */
  lastMerge: CommittedMerge;
  lastRewrite: RewriteResult;
  /** median MERGE / median full rewrite. */
  timeRatio: number;
  /** The same for the process CPU time (less sensitive to a busy host than wall time). */
  cpuRatio: number;
  /** Peak resident memory of the MERGE and of the full rewrite (largest over the repetitions). */
  peakRss: { merge: PeakRss; rewrite: PeakRss };
  /** MERGE / full rewrite of each repetition. */
  pairedRatios: number[];
  /** Bytes the last MERGE wrote (new data files and its deletion-vector file) / bytes of the table. */
  bytesRatio: number;
  /** Slowest statements of the last repetition, and every statement of its MERGE in order. */
  sql: { merge: SlowSql[]; rewrite: SlowSql[]; mergeStatements: TracedSql[] };
  verified: {
    rowsExpected: number;
    mergeRows: number;
    rewriteRows: number;
    fingerprintsEqual: boolean;
    sampledMismatches: number;
  };
}

/** Run the benchmark, print its tables and write the JSON result. */
export async function benchMerge(opts: MergeBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('merge', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  try {
    const base = await buildBase(ws, opts);
    const variants: VariantResult[] = [];
    for (const spread of ['newest', 'scattered'] as const)
      variants.push(await runVariant(ws, opts, base, spread));
    const otherLoad = stopWatch();
    printTables(mergeTables(opts, base, variants));
    if (opts.trace) for (const v of variants) printStatements(v);
    process.stdout.write(`${MERGE_LEGEND}\n${describeOtherLoad(otherLoad)}`);
    await writeJson(opts.jsonPath, {
      benchmark: 'merge',
      env,
      otherLoad,
      options: opts,
      base,
      targets: MERGE_TARGETS,
      variants,
    });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    const failed = variants.filter((v) => !isVerified(v));
    if (failed.length > 0)
      throw new Error(
        `[bench] merge results failed verification: ${failed.map((v) => v.spread).join(', ')}`,
      );
  } finally {
    await ws.dispose();
  }
}

/** The base table and what building it cost. */
export interface BaseTable {
  dir: string;
  buildMs: number;
  fingerprint: TableFingerprint;
}

async function buildBase(ws: Workspace, opts: MergeBenchOptions): Promise<BaseTable> {
  const dir = ws.path('base');
  progress(`building the base table: ${count(opts.rows)} orders in ~${opts.files} files`);
  const built = await withSession((s) =>
    timed(() => createOrdersTable(s, dir, opts.rows, opts.files, opts.partitionBy)),
  );
  const fp = await withSession((s) => fingerprint(s, dir, ORDER_COLUMNS));
  progress(`  ${secs(built.ms)}: ${fp.files} files, ${mib(fp.bytes)}`);
  return { dir, buildMs: built.ms, fingerprint: fp };
}

async function runVariant(
  ws: Workspace,
  opts: MergeBenchOptions,
  base: BaseTable,
  spread: ChangeSpread,
): Promise<VariantResult> {
  const inserts = Math.round(opts.changes * opts.insertShare);
  const batch: ChangeSpec = { rows: opts.rows, updates: opts.changes - inserts, inserts, spread };
  const spec: UpsertSpec = {
    columns: ORDER_COLUMNS,
    key: ORDER_KEY,
    orderBy: ORDER_VERSION,
    batch: 'bench_changes',
  };
  const reps: Repetition[] = [];
  for (let rep = 1; rep <= opts.repeat; rep++) {
    progress(
      `${spread} (${rep}/${opts.repeat}): MERGE of ${count(opts.changes)} rows, full rewrite${opts.lean ? ', lean COPY' : ''}`,
    );
    if (rep > 1)
      await Promise.all([
        rm(ws.path(`${spread}-merge`), { recursive: true }),
        rm(ws.path(`${spread}-rewrite`), { recursive: true }),
      ]);
    reps.push(
      await repetition(ws, opts, base, { spread, batch, spec, trace: rep === opts.repeat }),
    );
    const r = reps[reps.length - 1]!;
    progress(
      `  ${secs(r.mergeMs)}, ${secs(r.rewriteMs)}${r.leanMs === null ? '' : `, ${secs(r.leanMs)}`}`,
    );
  }
  const last = reps[reps.length - 1]!;
  const merge = samplesOf(reps.map((r) => r.mergeMs));
  const rewrite = samplesOf(reps.map((r) => r.rewriteMs));
  const cpu = {
    merge: samplesOf(reps.map((r) => r.mergeCpuMs)),
    rewrite: samplesOf(reps.map((r) => r.rewriteCpuMs)),
  };
  const verified = await verifyVariant(
    spec,
    batch,
    { merge: ws.path(`${spread}-merge`), rewrite: ws.path(`${spread}-rewrite`) },
    base.fingerprint.rows + inserts,
  );
  return {
    spread,
    batch,
    merge,
    rewrite,
    lean: opts.lean ? samplesOf(reps.map((r) => r.leanMs!)) : null,
    lastMerge: last.merge,
    lastRewrite: last.rewrite,
    timeRatio: merge.median / rewrite.median,
    cpuRatio: cpu.merge.median / cpu.rewrite.median,
    peakRss: {
      merge: largest(reps.map((r) => r.mergeRss)),
      rewrite: largest(reps.map((r) => r.rewriteRss)),
    },
    pairedRatios: reps.map((r) => r.mergeMs / r.rewriteMs),
    bytesRatio: bytesWritten(last.merge) / base.fingerprint.bytes,
    sql: last.sql,
    verified,
  };
}

/** One MERGE, full rewrite and lean COPY, each on its own copy of the base table. */
interface Repetition {
  mergeMs: number;
  mergeCpuMs: number;
  mergeRss: PeakRss;
  merge: CommittedMerge;
  rewriteMs: number;
  rewriteCpuMs: number;
  rewriteRss: PeakRss;
  rewrite: RewriteResult;
  leanMs: number | null;
  sql: { merge: SlowSql[]; rewrite: SlowSql[]; mergeStatements: TracedSql[] };
}

async function repetition(
  ws: Workspace,
  opts: MergeBenchOptions,
  base: BaseTable,
  run: { spread: ChangeSpread; batch: ChangeSpec; spec: UpsertSpec; trace: boolean },
): Promise<Repetition> {
  const dirs = {
    merge: ws.path(`${run.spread}-merge`),
    rewrite: ws.path(`${run.spread}-rewrite`),
    lean: ws.path(`${run.spread}-lean`),
  };
  const { spec, batch } = run;
  const rowsPerFile = Math.ceil(opts.rows / opts.files);
  await copyFolder(base.dir, dirs.merge);
  await copyFolder(base.dir, dirs.rewrite);
  const maybeTrace = <T>(fn: () => Promise<T>) =>
    run.trace ? traceSql(fn) : fn().then((value) => ({ value, statements: [] }));
  const merged = await withBatch(spec.batch, batch, (s) =>
    maybeTrace(() =>
      timed(() =>
        mergeAndCommit(openTable(dirs.merge, s), s, {
          batch: spec.batch,
          keyColumns: [ORDER_KEY],
          orderBy: ORDER_VERSION,
          deletionVectors: opts.deletionVectors,
        }),
      ),
    ),
  );
  const rewrite = await withBatch(spec.batch, batch, (s) =>
    maybeTrace(() => timed(() => fullRewrite(s, dirs.rewrite, spec, rowsPerFile))),
  );
  let leanMs: number | null = null;
  if (opts.lean) {
    leanMs = (
      await withBatch(spec.batch, batch, (s) =>
        timed(() => leanCopy(s, base.dir, dirs.lean, spec, rowsPerFile)),
      )
    ).ms;
    await rm(dirs.lean, { recursive: true, force: true });
  }
  return {
    mergeMs: merged.value.ms,
    mergeCpuMs: merged.value.cpuMs,
    mergeRss: merged.value.peakRss,
    merge: merged.value.value,
    rewriteMs: rewrite.value.ms,
    rewriteCpuMs: rewrite.value.cpuMs,
    rewriteRss: rewrite.value.peakRss,
    rewrite: rewrite.value.value,
    leanMs,
    sql: {
      merge: slowest(merged.statements, SQL_TOP),
      rewrite: slowest(rewrite.statements, SQL_TOP),
      mergeStatements: merged.statements,
    },
  };
}

async function verifyVariant(
  spec: UpsertSpec,
  batch: ChangeSpec,
  dirs: { merge: string; rewrite: string },
  rowsExpected: number,
) {
  const [m, r] = [
    await withSession((s) => fingerprint(s, dirs.merge, ORDER_COLUMNS)),
    await withSession((s) => fingerprint(s, dirs.rewrite, ORDER_COLUMNS)),
  ];
  const bad = await withBatch(spec.batch, batch, (s) =>
    sampledMismatches(s, dirs.merge, {
      batch: spec.batch,
      key: ORDER_KEY,
      columns: ORDER_COLUMNS,
      sample: 20,
    }),
  );
  return {
    rowsExpected,
    mergeRows: m.rows,
    rewriteRows: r.rows,
    fingerprintsEqual: m.hash === r.hash,
    sampledMismatches: bad.length,
  };
}

/** Every statement of the variant's last MERGE, in the order it ran (`--trace`). */
function printStatements(v: VariantResult): void {
  process.stdout.write(
    statementListing(`Every statement of the last MERGE, ${v.spread}`, v.sql.mergeStatements),
  );
}

/** All correctness checks of a variant passed. */
export function isVerified(v: VariantResult): boolean {
  const c = v.verified;
  return (
    c.fingerprintsEqual &&
    c.sampledMismatches === 0 &&
    c.mergeRows === c.rowsExpected &&
    c.rewriteRows === c.rowsExpected
  );
}

/** What a MERGE wrote: its new data files and its deletion-vector file. */
export function bytesWritten(m: CommittedMerge): number {
  return m.bytesAdded + m.dvBytes;
}

function largest(peaks: readonly PeakRss[]): PeakRss {
  return peaks.reduce((a, b) => (b.bytes > a.bytes ? b : a));
}

function openTable(dir: string, session: DuckSession): DeltaTable {
  return openAt(LocalStorage.at(dir), session, { singleWriter: true });
}

/** A fresh session holding the change batch as a temp table (created before any timing). */
function withBatch<T>(
  name: string,
  batch: ChangeSpec,
  fn: (session: DuckSession) => Promise<T>,
): Promise<T> {
  return withSession(async (s) => {
    await createChangeBatch(s, name, batch);
    return fn(s);
  });
}
