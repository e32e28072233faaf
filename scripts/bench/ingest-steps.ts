/**
 * Steps (a) and (b) of the ingest benchmark, each measured in interleaved repetitions so the
 * baseline and tidemark see the same machine conditions; medians are reported.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { samplesOf, timed, type Samples, type Timed } from './clock.js';
import { runCowFloor, type CowFloorOutput } from './cow-floor.js';
import { parquetFingerprint, runHandwritten } from './handwritten.js';
import { ordersJob, runOrdersJob, tracedProfile, type JobProfile } from './job.js';
import { writeLanding, type LandingFile, type LandingSpec } from './landing.js';
import { ORDER_COLUMNS } from './orders.js';
import { secs } from './report.js';
import { progress, withSession } from './session.js';
import { fingerprint, type TableFingerprint } from './verify.js';
import { copyFolder, type Workspace } from './workspace.js';

type Report = Awaited<ReturnType<typeof runOrdersJob>>['report'];
type Run = { ms: number; cpuMs: number };
type FloorRun = Timed<CowFloorOutput>;

const NEW_FILES = 2;

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
  profile: JobProfile;
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
  profile: JobProfile;
  whatIf: WhatIfResult | null;
  floor: FloorResult;
}

/** The hand-written copy-on-write floor (./cow-floor.ts) for the same new files and table. */
export interface FloorResult {
  runs: Samples;
  /** median floor / median full reload (of the real job). */
  ratio: number;
  output: CowFloorOutput;
  /** It inserted and updated as many rows as the job did. */
  verified: boolean;
}

/** The incremental run on a table whose every load wrote files of `targetFileRows` rows (target.maxRowsPerFile). */
export interface WhatIfResult {
  targetFileRows: number;
  tableFiles: number;
  incremental: Samples;
  /** median what-if incremental / median full reload (of the real job). */
  ratio: number;
  profile: JobProfile;
}

/** The job of this benchmark into `target` (a folder of the workspace), optionally writing files of `maxRowsPerFile` rows. */
function job(ws: Workspace, spec: LandingSpec, target: string, maxRowsPerFile?: number) {
  return ordersJob({
    name: 'orders',
    source: spec.root,
    target: ws.path(target),
    spoolRoot: ws.dir,
    ...(maxRowsPerFile ? { maxRowsPerFile } : {}),
  });
}

/** (a) Hand-written pipeline and tidemark's first load, alternated; the last table stays as `table`. */
export async function benchInitial(
  ws: Workspace,
  spec: LandingSpec,
  landing: readonly LandingFile[],
  repeat: number,
): Promise<InitialResult> {
  const out = ws.path('handwritten.parquet');
  const files = landing.map((f) => join(spec.root, ...f.key.split('/')));
  await warmUp(ws, spec, files.slice(0, 2));
  const hand: Run[] = [];
  const runs: Array<Run & { report: Report }> = [];
  for (let rep = 1; rep <= repeat; rep++) {
    progress(`(a ${rep}/${repeat}) hand-written DuckDB pipeline, tidemark job`);
    await rm(out, { force: true });
    await rm(ws.path('table'), { recursive: true, force: true });
    hand.push(
      await withSession((s) =>
        timed(() => runHandwritten(s, { files, out, key: 'order_id', orderBy: 'updated_at' })),
      ),
    );
    runs.push(await runOrdersJob(job(ws, spec, 'table')));
    progress(`  ${secs(hand[hand.length - 1]!.ms)}, ${secs(runs[runs.length - 1]!.ms)}`);
  }
  const table = await withSession((s) => fingerprint(s, ws.path('table'), ORDER_COLUMNS));
  const expected = await withSession((s) => parquetFingerprint(s, out, ORDER_COLUMNS));
  progress('  phase profile');
  const profile = await tracedProfile(job(ws, spec, 'table-profile'));
  await rm(ws.path('table-profile'), { recursive: true, force: true });
  const report = runs[runs.length - 1]!.report;
  const [h, t] = [samplesOf(hand.map((r) => r.ms)), samplesOf(runs.map((r) => r.ms))];
  return {
    landingRows: spec.files * spec.rowsPerFile,
    handwritten: h,
    tidemark: t,
    ratio: t.median / h.median,
    cpuRatio:
      samplesOf(runs.map((r) => r.cpuMs)).median / samplesOf(hand.map((r) => r.cpuMs)).median,
    report,
    table,
    verified:
      report.status === 'succeeded' && table.rows === expected.rows && table.hash === expected.hash,
    profile,
  };
}

/**
 * Both pipelines once on two files, unmeasured, so one-time costs of the process (module and
 * DuckDB initialisation, first allocations) fall on neither side of the first measurement.
 */
async function warmUp(ws: Workspace, spec: LandingSpec, files: readonly string[]): Promise<void> {
  const dir = ws.path('warm-up');
  await mkdir(dir, { recursive: true });
  await withSession((s) =>
    runHandwritten(s, {
      files,
      out: join(dir, 'out.parquet'),
      key: 'order_id',
      orderBy: 'updated_at',
    }),
  );
  const landing = join(dir, 'landing');
  await withSession((s) =>
    writeLanding(s, { ...spec, root: landing, files: 2, rowsPerFile: 1000 }),
  );
  await runOrdersJob(
    ordersJob({ name: 'warm-up', source: landing, target: join(dir, 'table'), spoolRoot: ws.dir }),
  );
  await rm(dir, { recursive: true, force: true });
}

/**
 * (b) New files on copies of the (a) table, alternated with full reloads into fresh tables
 * (and with the what-if, on copies of a table loaded with smaller files).
 */
export async function benchIncremental(
  ws: Workspace,
  spec: LandingSpec,
  opts: { repeat: number; whatIfRows: number },
): Promise<IncrementalResult> {
  const whatIfBase = opts.whatIfRows > 0 ? await buildWhatIfBase(ws, spec, opts.whatIfRows) : null;
  const added = await withSession((s) =>
    writeLanding(s, { ...spec, files: NEW_FILES, firstFile: spec.files }),
  );
  const floorSpec = {
    table: ws.path('table'),
    newFiles: added.map((f) => join(spec.root, ...f.key.split('/'))),
    out: ws.path('floor'),
    key: 'order_id',
    orderBy: 'updated_at',
  };
  const inc: Array<Run & { report: Report }> = [];
  const reload: Run[] = [];
  const whatIf: number[] = [];
  const floor: FloorRun[] = [];
  for (let rep = 1; rep <= opts.repeat; rep++) {
    progress(
      `(b ${rep}/${opts.repeat}) incremental run with ${NEW_FILES} new files, full reload of ${spec.files + NEW_FILES} files, copy-on-write floor${whatIfBase ? ', what-if' : ''}`,
    );
    await Promise.all(
      ['inc', 'reload', 'what-if', 'floor'].map((d) =>
        rm(ws.path(d), { recursive: true, force: true }),
      ),
    );
    await copyFolder(ws.path('table'), ws.path('inc'));
    inc.push(await runOrdersJob(job(ws, spec, 'inc')));
    reload.push(await runOrdersJob(job(ws, spec, 'reload')));
    await mkdir(floorSpec.out, { recursive: true });
    floor.push(await runCowFloor(floorSpec));
    if (whatIfBase) {
      await copyFolder(whatIfBase, ws.path('what-if'));
      whatIf.push((await runOrdersJob(job(ws, spec, 'what-if', opts.whatIfRows))).ms);
    }
    progress(
      `  ${[inc[inc.length - 1]!.ms, reload[reload.length - 1]!.ms, floor[floor.length - 1]!.ms, ...whatIf.slice(-1)].map(secs).join(', ')}`,
    );
  }
  const table = await withSession((s) => fingerprint(s, ws.path('inc'), ORDER_COLUMNS));
  const expected = await withSession((s) => fingerprint(s, ws.path('reload'), ORDER_COLUMNS));
  progress('  phase profiles');
  await copyFolder(ws.path('table'), ws.path('inc-profile'));
  const profile = await tracedProfile(job(ws, spec, 'inc-profile'));
  const [i, r] = [samplesOf(inc.map((x) => x.ms)), samplesOf(reload.map((x) => x.ms))];
  const report = inc[inc.length - 1]!.report;
  return {
    newFiles: NEW_FILES,
    incremental: i,
    fullReload: r,
    ratio: i.median / r.median,
    cpuRatio:
      samplesOf(inc.map((x) => x.cpuMs)).median / samplesOf(reload.map((x) => x.cpuMs)).median,
    report,
    table,
    verified:
      report.filesLoaded === NEW_FILES &&
      table.rows === expected.rows &&
      table.hash === expected.hash,
    profile,
    whatIf: whatIfBase
      ? await whatIfResult(ws, spec, whatIfBase, opts.whatIfRows, whatIf, r.median)
      : null,
    floor: floorResult(floor, report, r.median),
  };
}

function floorResult(runs: readonly FloorRun[], report: Report, reloadMedian: number): FloorResult {
  const samples = samplesOf(runs.map((x) => x.ms));
  const output = runs[runs.length - 1]!.value;
  return {
    runs: samples,
    ratio: samples.median / reloadMedian,
    output,
    verified: output.inserted === report.inserted && output.updated === report.updated,
  };
}

/** The (a) load again by the job, writing files of `rows` rows (target.maxRowsPerFile); returns its folder. */
async function buildWhatIfBase(ws: Workspace, spec: LandingSpec, rows: number): Promise<string> {
  progress(
    `(b) what-if base: the initial load writing files of ${rows.toLocaleString('en-US')} rows`,
  );
  await runOrdersJob(job(ws, spec, 'what-if-base', rows));
  return ws.path('what-if-base');
}

async function whatIfResult(
  ws: Workspace,
  spec: LandingSpec,
  base: string,
  rows: number,
  runs: number[],
  reloadMedian: number,
): Promise<WhatIfResult> {
  const files = await withSession((s) => fingerprint(s, base, ORDER_COLUMNS));
  await rm(ws.path('what-if'), { recursive: true, force: true });
  await copyFolder(base, ws.path('what-if'));
  const profile = await tracedProfile(job(ws, spec, 'what-if', rows));
  const incremental = samplesOf(runs);
  return {
    targetFileRows: rows,
    tableFiles: files.files,
    incremental,
    ratio: incremental.median / reloadMedian,
    profile,
  };
}
