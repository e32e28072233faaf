/**
 * `npm run bench -- merge` (issue 2 §5): MERGE of 10,000 changed orders into a 10-million-row
 * table of ~100 files clustered by order_id, against the same change done as a full rewrite.
 *
 *   base table (tidemark's create path)  ──copy──►  MERGE (mergeIntoTable)
 *                                        ──copy──►  full rewrite (read all, upsert, tidemark writer, overwrite commit)
 *                                        ──copy──►  lean COPY (one DuckDB COPY, no stats/commit: lower bound)
 *   for two change batches: among the newest 1% of orders (targets apply), and scattered over all.
 *
 * Each step gets its own copy of the base table and its own DuckDB session. Correctness: the
 * MERGE result and the full rewrite have the same row count and row fingerprint, the count is
 * the base plus the inserts, and sampled batch keys read back with the batch's values.
 */
import { DeltaTable } from '../../src/delta/table.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { mergeIntoTable, type MergeResult } from '../../src/engine/merge/index.js';
import { LocalStorage } from '../../src/storage/local.js';
import { timed } from './clock.js';
import { benchEnv, describeEnv } from './env.js';
import { fullRewrite, leanCopy, type LeanCopyResult, type RewriteResult, type UpsertSpec } from './full-rewrite.js';
import { ORDER_COLUMNS, ORDER_KEY, ORDER_VERSION, createChangeBatch, createOrdersTable, type ChangeSpec, type ChangeSpread } from './orders.js';
import { count, mib, pct, printTables, secs, times, verdict, writeJson, type TextTable } from './report.js';
import { fingerprint, sampledMismatches, type TableFingerprint } from './verify.js';
import { progress, withSession } from './session.js';
import { copyFolder, openWorkspace, type Workspace } from './workspace.js';

/** Targets of issue 2 §5 for changes among the newest orders. */
export const MERGE_TARGETS = { timeRatio: 0.05, bytesRatio: 0.03 } as const;

/** Sizes of the benchmark; the defaults are the issue's. */
export interface MergeBenchOptions {
  rows: number;
  files: number;
  /** Changed rows per batch (updates + inserts). */
  changes: number;
  /** Share of the changes that are new orders. */
  insertShare: number;
  /** Also time the lean COPY lower bound. */
  lean: boolean;
  keep: boolean;
  jsonPath: string;
  command: string;
}

/** One change batch's figures. */
interface VariantResult {
  spread: ChangeSpread;
  batch: ChangeSpec;
  mergeMs: number;
  merge: MergeResult;
  rewrite: RewriteResult;
  lean: LeanCopyResult | null;
  timeRatio: number;
  bytesRatio: number;
  verified: { rowsExpected: number; mergeRows: number; rewriteRows: number; fingerprintsEqual: boolean; sampledMismatches: number };
}

/** Run the benchmark, print its tables and write the JSON result. */
export async function benchMerge(opts: MergeBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('merge', { keep: opts.keep });
  try {
    const base = await buildBase(ws, opts);
    const variants: VariantResult[] = [];
    for (const spread of ['newest', 'scattered'] as const) variants.push(await runVariant(ws, opts, base, spread));
    printTables(tablesOf(opts, base, variants));
    await writeJson(opts.jsonPath, { benchmark: 'merge', env, options: opts, base, targets: MERGE_TARGETS, variants });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    const failed = variants.filter((v) => !isVerified(v));
    if (failed.length > 0) throw new Error(`[bench] merge results failed verification: ${failed.map((v) => v.spread).join(', ')}`);
  } finally {
    await ws.dispose();
  }
}

/** The base table and what building it cost. */
interface BaseTable {
  dir: string;
  buildMs: number;
  fingerprint: TableFingerprint;
}

async function buildBase(ws: Workspace, opts: MergeBenchOptions): Promise<BaseTable> {
  const dir = ws.path('base');
  progress(`building the base table: ${count(opts.rows)} orders in ~${opts.files} files`);
  const built = await withSession((s) => timed(() => createOrdersTable(s, dir, opts.rows, opts.files)));
  const fp = await withSession((s) => fingerprint(s, dir, ORDER_COLUMNS));
  progress(`  ${secs(built.ms)}: ${fp.files} files, ${mib(fp.bytes)}`);
  return { dir, buildMs: built.ms, fingerprint: fp };
}

async function runVariant(ws: Workspace, opts: MergeBenchOptions, base: BaseTable, spread: ChangeSpread): Promise<VariantResult> {
  const inserts = Math.round(opts.changes * opts.insertShare);
  const batch: ChangeSpec = { rows: opts.rows, updates: opts.changes - inserts, inserts, spread };
  const dirs = { merge: ws.path(`${spread}-merge`), rewrite: ws.path(`${spread}-rewrite`), lean: ws.path(`${spread}-lean`) };
  await copyFolder(base.dir, dirs.merge);
  await copyFolder(base.dir, dirs.rewrite);
  const spec: UpsertSpec = { columns: ORDER_COLUMNS, key: ORDER_KEY, orderBy: ORDER_VERSION, batch: 'bench_changes' };
  const rowsPerFile = Math.ceil(opts.rows / opts.files);

  progress(`${spread}: MERGE of ${count(opts.changes)} rows`);
  const merged = await withBatch(spec.batch, batch, (s) =>
    timed(() => mergeIntoTable({ session: s, table: openTable(dirs.merge, s), batch: spec.batch, keyColumns: [ORDER_KEY], orderBy: ORDER_VERSION })),
  );
  progress(`  ${secs(merged.ms)}; full rewrite`);
  const rewrite = await withBatch(spec.batch, batch, (s) => fullRewrite(s, dirs.rewrite, spec, rowsPerFile));
  progress(`  ${secs(rewrite.totalMs)}${opts.lean ? '; lean COPY' : ''}`);
  const lean = opts.lean ? await withBatch(spec.batch, batch, (s) => leanCopy(s, base.dir, dirs.lean, spec, rowsPerFile)) : null;
  if (lean) progress(`  ${secs(lean.totalMs)}; verifying`);
  const verified = await verifyVariant(spec, batch, dirs, base.fingerprint.rows + inserts);
  return {
    spread,
    batch,
    mergeMs: merged.ms,
    merge: merged.value,
    rewrite,
    lean,
    timeRatio: merged.ms / rewrite.totalMs,
    bytesRatio: merged.value.bytesRewritten / base.fingerprint.bytes,
    verified,
  };
}

async function verifyVariant(spec: UpsertSpec, batch: ChangeSpec, dirs: { merge: string; rewrite: string }, rowsExpected: number) {
  const [m, r] = [await withSession((s) => fingerprint(s, dirs.merge, ORDER_COLUMNS)), await withSession((s) => fingerprint(s, dirs.rewrite, ORDER_COLUMNS))];
  const bad = await withBatch(spec.batch, batch, (s) => sampledMismatches(s, dirs.merge, { batch: spec.batch, key: ORDER_KEY, columns: ORDER_COLUMNS, sample: 20 }));
  return { rowsExpected, mergeRows: m.rows, rewriteRows: r.rows, fingerprintsEqual: m.hash === r.hash, sampledMismatches: bad.length };
}

function isVerified(v: VariantResult): boolean {
  const c = v.verified;
  return c.fingerprintsEqual && c.sampledMismatches === 0 && c.mergeRows === c.rowsExpected && c.rewriteRows === c.rowsExpected;
}

function openTable(dir: string, session: DuckSession): DeltaTable {
  return DeltaTable.open(LocalStorage.at(dir), session, { singleWriter: true });
}


/** A fresh session holding the change batch as a temp table (created before any timing). */
function withBatch<T>(name: string, batch: ChangeSpec, fn: (session: DuckSession) => Promise<T>): Promise<T> {
  return withSession(async (s) => {
    await createChangeBatch(s, name, batch);
    return fn(s);
  });
}


function tablesOf(opts: MergeBenchOptions, base: BaseTable, variants: readonly VariantResult[]): TextTable[] {
  const fp = base.fingerprint;
  const summary: TextTable = {
    title: `MERGE of ${count(opts.changes)} changed rows vs full rewrite — table: ${count(fp.rows)} rows, ${fp.files} files, ${mib(fp.bytes)} (built in ${secs(base.buildMs)})`,
    header: ['changes', 'MERGE', 'full rewrite', 'MERGE/rewrite', 'target', '', 'bytes rewritten', '% of table', 'target', '', 'lean COPY', 'MERGE/lean', 'verified'],
    rows: variants.map((v) => {
      const newest = v.spread === 'newest';
      return [
        `${v.spread} (${count(v.batch.updates)} upd + ${count(v.batch.inserts)} ins)`,
        secs(v.mergeMs),
        secs(v.rewrite.totalMs),
        pct(v.timeRatio),
        newest ? `≤ ${pct(MERGE_TARGETS.timeRatio)}` : '-',
        newest ? verdict(v.timeRatio <= MERGE_TARGETS.timeRatio) : '',
        mib(v.merge.bytesRewritten),
        pct(v.bytesRatio),
        newest ? `≤ ${pct(MERGE_TARGETS.bytesRatio)}` : '-',
        newest ? verdict(v.bytesRatio <= MERGE_TARGETS.bytesRatio) : '',
        v.lean ? secs(v.lean.totalMs) : '-',
        v.lean ? pct(v.mergeMs / v.lean.totalMs) : '-',
        isVerified(v) ? 'ok' : 'FAILED',
      ];
    }),
  };
  return [summary, phaseTable(variants), countsTable(variants)];
}

function phaseTable(variants: readonly VariantResult[]): TextTable {
  const phases = ['prepare', 'prune', 'classify', 'write', 'commit'] as const;
  const rw = ['snapshot', 'rewrite', 'upload', 'commit'] as const;
  return {
    title: 'Phases (MERGE: mergeIntoTable durations; full rewrite: snapshot, read+upsert+sort+write, upload, commit)',
    header: ['changes', ...phases.map((p) => `MERGE ${p}`), 'MERGE total', ...rw.map((p) => `rewrite ${p}`)],
    rows: variants.map((v) => [
      v.spread,
      ...phases.map((p) => secs(v.merge.durations[p])),
      secs(v.merge.durations.total),
      ...rw.map((p) => secs(v.rewrite.phases[p] ?? 0)),
    ]),
  };
}

function countsTable(variants: readonly VariantResult[]): TextTable {
  return {
    title: 'MERGE outcome',
    header: ['changes', 'inserted', 'updated', 'stale', 'files scanned', 'files read', 'removed', 'added', 'rows copied', 'rewrite ×', 'rows after'],
    rows: variants.map((v) => [
      v.spread,
      count(v.merge.inserted),
      count(v.merge.updated),
      count(v.merge.skippedStale),
      count(v.merge.filesScanned),
      count(v.merge.filesRead),
      count(v.merge.filesRemoved),
      count(v.merge.filesAdded),
      count(v.merge.rowsCopied),
      times(v.rewrite.totalMs / v.mergeMs),
      count(v.verified.mergeRows),
    ]),
  };
}
