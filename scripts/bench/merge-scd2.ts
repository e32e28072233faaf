/**
 * `npm run bench -- merge --mode scd2` (docs/benchmarks.md, issue 26): closing scattered versions
 * in a history table, against the same MERGE in merge mode on the same table.
 *
 *   base history table: the orders of `bench -- merge`, each one current version
 *   (valid_from = updated_at, valid_to NULL, is_current true)
 *     ──copy──►  scd2: the change batch closes each changed key's version and opens a new one
 *     ──copy──►  merge: the same batch (with the history columns) overwrites each changed key
 *   interleaved, each step on its own copy and in its own DuckDB session; medians reported.
 *
 * Correctness: the scd2 table's current versions equal the merge table's rows (order columns),
 * and it holds one more row per updated key (the closed version).
 */
import { rm } from 'node:fs/promises';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident } from '../../src/engine/sql.js';
import { withTableScan } from '../../src/engine/scan.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  mergeAndCommit,
  openTable,
  scanSource,
  scd2AndCommit,
  type CommittedMerge,
} from '../lib/tables.js';
import { samplesOf, timed, type Samples, type Timed } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import {
  ORDER_COLUMNS,
  ORDER_KEY,
  ORDER_VERSION,
  createChangeBatch,
  orderRowSql,
  type ChangeSpec,
} from './orders.js';
import { count, mib, printTables, secs, times, verdict, writeJson } from './report.js';
import { progress, withSession } from './session.js';
import { statementListing, traceSql, type TracedSql } from './sql-trace.js';
import { copyFolder, openWorkspace } from './workspace.js';

/** The target: the scd2 write costs at most this multiple of the merge-mode MERGE. */
export const SCD2_TARGET = 2;

const HISTORY = { validFrom: 'valid_from', validTo: 'valid_to', isCurrent: 'is_current' };
const BATCH = 'bench_changes';

/** Sizes of the benchmark (the merge bench's options that apply). */
export interface Scd2BenchOptions {
  rows: number;
  files: number;
  changes: number;
  insertShare: number;
  repeat: number;
  /** Print every statement of each mode's last step, in order, with its time. */
  trace: boolean;
  keep: boolean;
  jsonPath: string;
  command: string;
}

interface Step {
  ms: number;
  cpuMs: number;
  peakRssBytes: number;
  written: CommittedMerge;
  /** Every statement of the step, in order (`--trace`, last repetition only). */
  statements: TracedSql[];
}

/** Run the benchmark, print its table and write the JSON result. */
export async function benchMergeScd2(opts: Scd2BenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('merge-scd2', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  try {
    const base = ws.path('base');
    progress(`building the history table: ${count(opts.rows)} orders in ~${opts.files} files`);
    const built = await withSession((s) => timed(() => createHistoryTable(s, base, opts)));
    progress(`  ${secs(built.ms)}`);
    const inserts = Math.round(opts.changes * opts.insertShare);
    const batch: ChangeSpec = {
      rows: opts.rows,
      updates: opts.changes - inserts,
      inserts,
      spread: 'scattered',
    };
    const steps = { merge: [] as Step[], scd2: [] as Step[] };
    for (let rep = 1; rep <= opts.repeat; rep++) {
      // Alternate which mode goes first, so neither always meets a warmer page cache.
      const order = rep % 2 === 1 ? (['scd2', 'merge'] as const) : (['merge', 'scd2'] as const);
      for (const mode of order) {
        const dir = ws.path(mode);
        await rm(dir, { recursive: true, force: true });
        await copyFolder(base, dir);
        progress(`${mode} (${rep}/${opts.repeat}): ${count(opts.changes)} scattered changes`);
        const trace = opts.trace && rep === opts.repeat;
        const step = await withSession(async (s) => {
          await createChangeBatch(s, BATCH, batch);
          const run = () => timed(() => write(s, dir, mode));
          const traced = trace
            ? await traceSql(run)
            : { value: await run(), statements: [] as TracedSql[] };
          return stepOf(traced.value, traced.statements);
        });
        steps[mode].push(step);
        progress(`  ${secs(step.ms)}, CPU ${secs(step.cpuMs)}`);
      }
    }
    const verified = await withSession((s) =>
      verify(s, ws.path('scd2'), ws.path('merge'), opts.rows, batch),
    );
    const otherLoad = stopWatch();
    const wall = {
      merge: samplesOf(steps.merge.map((x) => x.ms)),
      scd2: samplesOf(steps.scd2.map((x) => x.ms)),
    };
    const cpu = {
      merge: samplesOf(steps.merge.map((x) => x.cpuMs)),
      scd2: samplesOf(steps.scd2.map((x) => x.cpuMs)),
    };
    const ratio = {
      wall: wall.scd2.median / wall.merge.median,
      cpu: cpu.scd2.median / cpu.merge.median,
    };
    printTables([resultTable(opts, wall, cpu, ratio, steps, verified)]);
    if (opts.trace)
      for (const mode of ['merge', 'scd2'] as const) {
        const last = steps[mode][steps[mode].length - 1]!;
        process.stdout.write(
          statementListing(`Every statement of the last ${mode} step`, last.statements),
        );
        process.stdout.write(`  phases (ms): ${JSON.stringify(last.written.durations)}\n`);
      }
    process.stdout.write(describeOtherLoad(otherLoad));
    await writeJson(opts.jsonPath, {
      benchmark: 'merge-scd2',
      env,
      otherLoad,
      options: opts,
      target: SCD2_TARGET,
      buildMs: built.ms,
      steps,
      wall,
      cpu,
      ratio,
      verified,
    });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    if (!verified.ok)
      throw new Error(`[bench] merge --mode scd2 failed verification: ${verified.why}`);
  } finally {
    await ws.dispose();
  }
}

/** The base: every order one current version, written by tidemark's create path. */
async function createHistoryTable(
  session: DuckSession,
  dir: string,
  opts: Scd2BenchOptions,
): Promise<void> {
  const seed = 'bench_history_seed';
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(seed)} AS SELECT *, ${historyOf('o')} FROM ` +
      `(SELECT ${orderRowSql('i', opts.rows)} FROM range(1, ${opts.rows + 1}) AS r(i)) AS o`,
  );
  try {
    await mergeAndCommit(
      openTable(LocalStorage.at(dir), session, { singleWriter: true }),
      session,
      {
        snapshot: null,
        batch: seed,
        keyColumns: [ORDER_KEY],
        orderBy: ORDER_VERSION,
        targetFileRows: Math.ceil(opts.rows / opts.files),
      },
    );
  } finally {
    await session.run(`DROP TABLE IF EXISTS ${ident(seed)}`);
  }
}

/** The history columns of a row that is its key's one current version. */
function historyOf(alias: string): string {
  return (
    `${alias}.${ident(ORDER_VERSION)} AS ${ident(HISTORY.validFrom)}, ` +
    `CAST(NULL AS TIMESTAMP) AS ${ident(HISTORY.validTo)}, true AS ${ident(HISTORY.isCurrent)}`
  );
}

/** The change batch written in `mode` into the table at `dir`. */
async function write(
  session: DuckSession,
  dir: string,
  mode: 'merge' | 'scd2',
): Promise<CommittedMerge> {
  const table = openTable(LocalStorage.at(dir), session, { singleWriter: true });
  const common = { keyColumns: [ORDER_KEY], orderBy: ORDER_VERSION };
  if (mode === 'scd2')
    return scd2AndCommit(table, session, { ...common, batch: BATCH, history: HISTORY });
  // merge mode meets the same table: its batch carries the history columns, as a current version.
  const withHistory = `${BATCH}_history`;
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(withHistory)} AS SELECT *, ${historyOf('b')} FROM ${ident(BATCH)} AS b`,
  );
  return mergeAndCommit(table, session, { ...common, batch: withHistory, keysUnique: true });
}

function stepOf(t: Timed<CommittedMerge>, statements: TracedSql[]): Step {
  return {
    ms: t.ms,
    cpuMs: t.cpuMs,
    peakRssBytes: t.peakRss.bytes,
    written: t.value,
    statements,
  };
}

interface Verified {
  ok: boolean;
  why: string;
  scd2Rows: number;
  mergeRows: number;
  currentEqualsMerge: boolean;
}

/** The scd2 table's current versions are the merge table's rows; it holds a closed version per update. */
async function verify(
  session: DuckSession,
  scd2Dir: string,
  mergeDir: string,
  rows: number,
  batch: ChangeSpec,
): Promise<Verified> {
  const hash = `hash(${ORDER_COLUMNS.map((c) => ident(c)).join(', ')})`;
  const current = `${ident(HISTORY.isCurrent)}`;
  const scan = async (dir: string, filter: string) => {
    const storage = LocalStorage.at(dir);
    const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
    const row = await withTableScan(session, scanSource(storage), snapshot!, (relation) =>
      session.one(
        `SELECT count(*)::BIGINT AS n, (sum(${hash}) FILTER (WHERE ${filter}))::VARCHAR AS h FROM (${relation})`,
      ),
    );
    return { rows: Number(row?.['n'] ?? 0), hash: String(row?.['h'] ?? '') };
  };
  const h = await scan(scd2Dir, current);
  const m = await scan(mergeDir, 'true');
  const currentEqualsMerge = h.hash === m.hash;
  const expected = { scd2: rows + batch.updates + batch.inserts, merge: rows + batch.inserts };
  const why = !currentEqualsMerge
    ? "the scd2 table's current versions differ from the merge table's rows"
    : h.rows !== expected.scd2 || m.rows !== expected.merge
      ? `rows: scd2 ${h.rows} (expected ${expected.scd2}), merge ${m.rows} (expected ${expected.merge})`
      : '';
  return { ok: why === '', why, scd2Rows: h.rows, mergeRows: m.rows, currentEqualsMerge };
}

function resultTable(
  opts: Scd2BenchOptions,
  wall: { merge: Samples; scd2: Samples },
  cpu: { merge: Samples; scd2: Samples },
  ratio: { wall: number; cpu: number },
  steps: { merge: Step[]; scd2: Step[] },
  verified: Verified,
) {
  const peak = (xs: Step[]) => mib(Math.max(...xs.map((x) => x.peakRssBytes)));
  const last = (xs: Step[]) => xs[xs.length - 1]!.written;
  const row = (mode: 'merge' | 'scd2') => [
    mode,
    secs(wall[mode].median),
    secs(cpu[mode].median),
    peak(steps[mode]),
    `${count(last(steps[mode]).inserted)} inserted, ${count(last(steps[mode]).updated)} updated, ${last(steps[mode]).filesAdded} files`,
  ];
  return {
    title: `scd2 vs merge: ${count(opts.changes)} scattered changes into ${count(opts.rows)} rows / ${opts.files} files (medians of ${opts.repeat}); rows check: ${verified.ok ? 'same current rows' : verified.why}`,
    header: ['mode', 'wall', 'CPU', 'peak RSS', 'written'],
    rows: [
      row('merge'),
      row('scd2'),
      [
        `scd2 / merge (target ≤ ${SCD2_TARGET} ×)`,
        `${times(ratio.wall)} ${verdict(ratio.wall <= SCD2_TARGET)}`,
        `${times(ratio.cpu)} ${verdict(ratio.cpu <= SCD2_TARGET)}`,
        '',
        '',
      ],
    ],
  };
}
