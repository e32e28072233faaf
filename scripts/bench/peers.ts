/**
 * `npm run bench -- peers` (docs/benchmarks.md, "Beside other tools"): the same work done by
 * tidemark, delta-rs and Spark with Delta Lake on this machine, in one run, interleaved.
 *
 *   MERGE workloads: a base table built once by tidemark (../orders.ts), copied per peer and
 *   repetition; the change batch as one Parquet file each peer reads and MERGEs by order_id.
 *     tidemark   ./peers/tidemark-worker.ts (the job's MERGE engine, deletion vectors)
 *     delta-rs   ./peers/worker.py deltalake: merge(...).when_matched_update_all().when_not_matched_insert_all()
 *                (its copy of the table without the deletion-vector feature, which delta-rs does not write)
 *     Spark      ./peers/worker.py spark: MERGE INTO ... UPDATE SET * INSERT *, deletion vectors, local[2]
 *   pipeline: daily landing files (./peers/pipeline-landing.ts) loaded day by day by `tidemark run`
 *   (the CLI, one process per day, its start-up counted) and by the tutorial's PySpark job.
 *
 * Each peer is a long-lived process (the JVM starts once; its start-up is reported, not counted);
 * per step: the step's wall time, the CPU time and peak RSS of the peer's processes (Python and
 * the JVM included; /proc), and the bytes of the files it added. Peers run in a rotating order,
 * `repeat` times; medians are reported, and after the last repetition every table is compared
 * row for row with tidemark's (./peers/row-check.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { str } from '../../src/engine/sql.js';
import { flushWrites, samplesOf } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import { createChangeBatch, createOrdersTable, type ChangeSpread } from './orders.js';
import { PeerProcess, filesUnder, type StepUsage } from './peers/peer-process.js';
import { PIPELINE_DAYS, writePipelineFiles, type PipelineFile } from './peers/pipeline-landing.js';
import { checkRows, type RowCheck } from './peers/row-check.js';
import { count, mib, printTables, secs, times, writeJson, type TextTable } from './report.js';
import { progress, withSession } from './session.js';
import { openWorkspace, type Workspace } from './workspace.js';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const TSX = join(REPO, 'node_modules/tsx/dist/loader.mjs');
const PYTHON_ENV = join(REPO, 'scripts/bench/peers/python-env.sh');
const WORKER_PY = join(REPO, 'scripts/bench/peers/worker.py');
const TIDEMARK_WORKER = join(REPO, 'scripts/bench/peers/tidemark-worker.ts');
const TIME_BINARY = '/usr/bin/time';

export type PeerName = 'tidemark' | 'delta-rs' | 'spark';
const MERGE_PEERS: readonly PeerName[] = ['tidemark', 'delta-rs', 'spark'];

/** Options of the benchmark. */
export interface PeersBenchOptions {
  /** 1 = the issue's sizes (10M and 50M rows); 0.1 = a tenth of every size (development). */
  scale: number;
  repeat: number;
  /** Workloads to run (default all). */
  only: readonly WorkloadName[];
  /** spark.driver.memory. */
  driverMemory: string;
  /** Leave Spark out (its JVM start-up takes minutes on a loaded machine): tidemark and delta-rs only. */
  noSpark: boolean;
  keep: boolean;
  jsonPath: string;
  command: string;
}

export const WORKLOADS = [
  'merge-newest',
  'merge-scattered',
  'merge-50m-scattered',
  'pipeline',
] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

interface MergeWorkload {
  name: WorkloadName;
  title: string;
  rows: number;
  files: number;
  changes: number;
  spread: ChangeSpread;
}

/** One peer's figures on one workload (medians over the repetitions). */
export interface PeerFigures {
  peer: PeerName;
  ms: number;
  cpuMs: number;
  peakRssBytes: number;
  bytesWritten: number;
  samples: number[];
  /** The peer's own count of its table's rows, and the row check against tidemark's. */
  ownRows: number | null;
  check: RowCheck | null;
  /** Per day (pipeline): median wall time of each day. */
  days?: number[];
  lastAnswer: Record<string, unknown>;
  /** Why the peer failed the workload (its figures are then NaN). */
  error?: string;
}

export interface WorkloadResult {
  name: WorkloadName;
  title: string;
  tableRows: number;
  tableBytes: number;
  loadAverage: { start: number[]; end: number[] };
  peers: PeerFigures[];
}

/** Run the benchmark, print its table and write the JSON result. */
export async function benchPeers(opts: PeersBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const python = await pythonEnv();
  const ws = await openWorkspace('peers', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  const peers = new Map<PeerName, PeerProcess>();
  try {
    progress('starting the peers (the JVM once; its start-up is not counted in any step)');
    peers.set(
      'tidemark',
      await PeerProcess.start('tidemark', process.execPath, ['--import', TSX, TIDEMARK_WORKER]),
    );
    peers.set('delta-rs', await PeerProcess.start('delta-rs', python, [WORKER_PY, 'deltalake']));
    const cache = join(REPO, '.bench/python/cache');
    if (!opts.noSpark)
      peers.set(
        'spark',
        await PeerProcess.start('spark', python, [
          WORKER_PY,
          'spark',
          cache,
          join(REPO, 'interop/ivysettings.xml'),
          opts.driverMemory,
        ]),
      );
    const warm = await warmUp(ws, peers);
    const startup = Object.fromEntries(
      [...peers].map(([n, p]) => [
        n,
        { ms: p.startupMs, warmUpMs: warm.get(n)!, version: p.hello.version },
      ]),
    );
    progress(
      `  started: ${[...peers].map(([n, p]) => `${n} ${secs(p.startupMs)} + warm-up ${secs(warm.get(n)!)}`).join(', ')}`,
    );

    const results: WorkloadResult[] = [];
    const s = opts.scale;
    const merges: MergeWorkload[] = [
      {
        name: 'merge-newest',
        title: 'MERGE newest keys',
        rows: Math.round(10_000_000 * s),
        files: 100,
        changes: Math.round(10_000 * s),
        spread: 'newest',
      },
      {
        name: 'merge-scattered',
        title: 'MERGE scattered keys',
        rows: Math.round(10_000_000 * s),
        files: 100,
        changes: Math.round(10_000 * s),
        spread: 'scattered',
      },
      {
        name: 'merge-50m-scattered',
        title: 'MERGE scattered keys',
        rows: Math.round(50_000_000 * s),
        files: 500,
        changes: Math.round(250_000 * s),
        spread: 'scattered',
      },
    ];
    let base: { rows: number; files: number; dir: string } | null = null;
    for (const w of merges) {
      if (!opts.only.includes(w.name)) continue;
      if (base?.rows !== w.rows || base.files !== w.files) {
        if (base) await removeBase(base.dir);
        base = await buildBase(ws, w.rows, w.files);
      }
      results.push(await runMerge(ws, opts, peers, w, base.dir));
    }
    if (opts.only.includes('pipeline')) {
      const rows = Math.round(10_000_000 * s);
      if (base?.rows !== rows) {
        if (base) await removeBase(base.dir);
        base = await buildBase(ws, rows, 100);
      }
      results.push(await runPipeline(ws, opts, peers, base.dir, rows));
    }
    const otherLoad = stopWatch();
    printTables([peersTable(opts, results)]);
    process.stdout.write(`${legend(startup, opts)}\n${describeOtherLoad(otherLoad)}`);
    await writeJson(opts.jsonPath, {
      benchmark: 'peers',
      env,
      otherLoad,
      options: opts,
      startup,
      results,
    });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    const bad = results.flatMap((r) =>
      r.peers.filter((p) => p.check && !p.check.same).map((p) => `${r.name}/${p.peer}`),
    );
    if (bad.length > 0) throw new Error(`[bench] tables differ from tidemark's: ${bad.join(', ')}`);
  } finally {
    for (const p of peers.values()) await p.stop().catch(() => undefined);
    await ws.dispose();
  }
}

/**
 * One small MERGE by each peer before anything is measured (its time reported with the
 * start-up): the JVM compiles Spark's and Delta's code paths on their first use, a one-off cost
 * a long-lived session does not pay again.
 */
async function warmUp(
  ws: Workspace,
  peers: Map<PeerName, PeerProcess>,
): Promise<Map<PeerName, number>> {
  const base = await buildBase(ws, 20_000, 10);
  const source = ws.path('warm-up-changes.parquet');
  await withSession(async (s) => {
    await createChangeBatch(s, 'changes', {
      rows: 20_000,
      updates: 190,
      inserts: 10,
      spread: 'scattered',
    });
    await s.run(`COPY changes TO ${str(source)} (FORMAT parquet, COMPRESSION zstd)`);
  });
  const out = new Map<PeerName, number>();
  for (const p of peers.keys()) {
    const dir = ws.path(`warm-up-${p}`);
    await cp(p === 'delta-rs' ? `${base.dir}-no-dv` : base.dir, dir, { recursive: true });
    out.set(p, (await peers.get(p)!.step({ op: 'merge', table: dir, source }, [dir])).ms);
    await rm(dir, { recursive: true, force: true });
  }
  await removeBase(base.dir);
  return out;
}

/** The Python environment (./peers/python-env.sh installs it on first use); its interpreter. */
async function pythonEnv(): Promise<string> {
  const { code, stdout } = await run('bash', [PYTHON_ENV], 'inherit');
  if (code !== 0) throw new Error(`[bench] ${PYTHON_ENV} failed (exit ${code})`);
  return stdout.trim().split('\n').pop()!;
}

async function removeBase(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await rm(`${dir}-no-dv`, { recursive: true, force: true });
}

async function buildBase(
  ws: Workspace,
  rows: number,
  files: number,
): Promise<{ rows: number; files: number; dir: string }> {
  const dir = ws.path(`base-${rows}`);
  progress(
    `building the base table: ${count(rows)} orders in ~${files} files (tidemark's create path)`,
  );
  await withSession((s) => createOrdersTable(s, dir, rows, files));
  await withoutDeletionVectors(dir, `${dir}-no-dv`);
  return { rows, files, dir };
}

/**
 * delta-rs's copy of a base table: the same files and commit, its protocol without the
 * deletion-vector feature and its configuration without delta.enableDeletionVectors (delta-rs
 * neither reads nor writes deletion vectors; the base has none).
 */
async function withoutDeletionVectors(from: string, to: string): Promise<void> {
  await cp(from, to, { recursive: true });
  const log = join(to, '_delta_log', '00000000000000000000.json');
  const lines = (await readFile(log, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, any>);
  for (const action of lines) {
    if (action['protocol']) action['protocol'] = { minReaderVersion: 1, minWriterVersion: 2 };
    if (action['metaData']) delete action['metaData'].configuration['delta.enableDeletionVectors'];
  }
  await writeFile(log, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
}

/** Peers in a rotating order, so none always runs first (or right after another's heavy step). */
function rotation<T>(items: readonly T[], rep: number): T[] {
  return items.map((_, i) => items[(i + rep) % items.length]!);
}

function loads(): number[] {
  return loadavg().map((l) => Math.round(l * 100) / 100);
}

async function runMerge(
  ws: Workspace,
  opts: PeersBenchOptions,
  peers: Map<PeerName, PeerProcess>,
  w: MergeWorkload,
  base: string,
): Promise<WorkloadResult> {
  const start = loads();
  const source = ws.path(`${w.name}-changes.parquet`);
  const inserts = Math.round(w.changes * 0.05);
  await withSession(async (s) => {
    await createChangeBatch(s, 'changes', {
      rows: w.rows,
      updates: w.changes - inserts,
      inserts,
      spread: w.spread,
    });
    await s.run(`COPY changes TO ${str(source)} (FORMAT parquet, COMPRESSION zstd)`);
  });
  const tableBytes = [...(await filesUnder([base])).values()].reduce((a, b) => a + b, 0);
  const merging = MERGE_PEERS.filter((p) => peers.has(p));
  const steps = new Map<PeerName, StepUsage[]>(merging.map((p) => [p, []]));
  const failed = new Map<PeerName, string>();
  const dirOf = (p: PeerName) => ws.path(`${w.name}-${p}`);
  for (let rep = 0; rep < opts.repeat; rep++) {
    for (const p of rotation(merging, rep)) {
      const dir = dirOf(p);
      await rm(dir, { recursive: true, force: true });
      await cp(p === 'delta-rs' ? `${base}-no-dv` : base, dir, { recursive: true });
      if (failed.has(p)) continue;
      progress(
        `${w.name} (${rep + 1}/${opts.repeat}) ${p}: MERGE of ${count(w.changes)} rows into ${count(w.rows)}`,
      );
      try {
        const step = await peers.get(p)!.step({ op: 'merge', table: dir, source }, [dir]);
        progress(
          `  ${secs(step.ms)}, CPU ${secs(step.cpuMs)}, peak RSS ${mib(step.peakRssBytes)}, wrote ${mib(step.bytesWritten)}`,
        );
        steps.get(p)!.push(step);
      } catch (err) {
        // A peer that fails (out of memory, killed) is reported as failed; the others go on.
        if (p === 'tidemark') throw err;
        failed.set(
          p,
          (err instanceof Error ? err.message : String(err)).split('\n').slice(0, 3).join(' '),
        );
        progress(`  FAILED: ${failed.get(p)}`);
      }
    }
  }
  progress(`${w.name}: row check`);
  const ok = merging.filter((p) => p !== 'tidemark' && !failed.has(p));
  const checks = await checkRows(
    dirOf('tidemark'),
    Object.fromEntries(ok.map((p) => [p, dirOf(p)])),
  );
  const own = new Map<PeerName, number | null>();
  for (const p of ok)
    own.set(
      p,
      Number((await peers.get(p)!.step({ op: 'count', table: dirOf(p) }, [])).answer['rows']),
    );
  const result: WorkloadResult = {
    name: w.name,
    title: `${w.title}: ${count(w.changes)} (${count(inserts)} new) into ${count(w.rows)} rows / ${w.files} files`,
    tableRows: w.rows,
    tableBytes,
    loadAverage: { start, end: loads() },
    peers: merging.map((p) =>
      failed.has(p)
        ? failedFigures(p, failed.get(p)!, steps.get(p)!)
        : figures(p, steps.get(p)!, own.get(p) ?? null, p === 'tidemark' ? null : checks[p]!),
    ),
  };
  for (const p of merging) await rm(dirOf(p), { recursive: true, force: true });
  return result;
}

function failedFigures(peer: PeerName, error: string, steps: readonly StepUsage[]): PeerFigures {
  return {
    peer,
    ms: NaN,
    cpuMs: NaN,
    peakRssBytes: NaN,
    bytesWritten: NaN,
    samples: steps.map((s) => s.ms),
    ownRows: null,
    check: null,
    lastAnswer: {},
    error,
  };
}

function figures(
  peer: PeerName,
  steps: readonly StepUsage[],
  ownRows: number | null,
  check: RowCheck | null,
): PeerFigures {
  const med = (f: (s: StepUsage) => number) => samplesOf(steps.map(f)).median;
  return {
    peer,
    ms: med((s) => s.ms),
    cpuMs: med((s) => s.cpuMs),
    peakRssBytes: med((s) => s.peakRssBytes),
    bytesWritten: med((s) => s.bytesWritten),
    samples: steps.map((s) => s.ms),
    ownRows,
    check,
    lastAnswer: steps[steps.length - 1]!.answer,
  };
}

/** The incremental pipeline: per repetition, fresh tables and landing zone, day by day, both loaders. */
async function runPipeline(
  ws: Workspace,
  opts: PeersBenchOptions,
  peers: Map<PeerName, PeerProcess>,
  base: string,
  rows: number,
): Promise<WorkloadResult> {
  const start = loads();
  const perFile = {
    insertsPerFile: Math.max(10, Math.round(10_000 * opts.scale)),
    updatesPerFile: Math.max(10, Math.round(5_000 * opts.scale)),
  };
  const spec = { rows, ...perFile, duplicatesPerDay: Math.round(perFile.insertsPerFile / 10) };
  const staged = ws.path('pipeline-files');
  const days = await withSession((s) => writePipelineFiles(s, staged, spec));
  const tableBytes = [...(await filesUnder([base])).values()].reduce((a, b) => a + b, 0);
  const landing = ws.path('pipeline-landing');
  const dirs = {
    tidemark: ws.path('pipeline-tidemark'),
    spark: ws.path('pipeline-spark'),
    control: ws.path('pipeline-spark-control'),
  };
  const config = ws.path('pipeline-tidemark.yaml');
  await writeFile(config, tidemarkConfig(landing, dirs.tidemark));
  const cli = await tidemarkCli();
  const runs: Record<'tidemark' | 'spark', StepUsage[][]> = { tidemark: [], spark: [] };
  for (let rep = 0; rep < opts.repeat; rep++) {
    for (const d of [landing, dirs.tidemark, dirs.spark, dirs.control])
      await rm(d, { recursive: true, force: true });
    await cp(base, dirs.tidemark, { recursive: true });
    await cp(base, dirs.spark, { recursive: true });
    const mine = { tidemark: [] as StepUsage[], spark: [] as StepUsage[] };
    for (let d = 0; d < PIPELINE_DAYS; d++) {
      await land(staged, landing, days[d]!);
      for (const p of rotation(['tidemark', 'spark'] as const, rep + d)) {
        const step =
          p === 'tidemark'
            ? await tidemarkRun(cli, config, dirs.tidemark)
            : await peers
                .get('spark')!
                .step({ op: 'day', table: dirs.spark, landing, control: dirs.control }, [
                  dirs.spark,
                  dirs.control,
                ]);
        mine[p].push(step);
      }
      progress(
        `pipeline (${rep + 1}/${opts.repeat}) day ${d + 1}: ${days[d]!.length} files, tidemark ${secs(mine.tidemark[d]!.ms)}, PySpark job ${secs(mine.spark[d]!.ms)}`,
      );
    }
    runs.tidemark.push(mine.tidemark);
    runs.spark.push(mine.spark);
  }
  progress('pipeline: row check');
  const checks = await checkRows(dirs.tidemark, { spark: dirs.spark });
  const ownSpark = Number(
    (await peers.get('spark')!.step({ op: 'count', table: dirs.spark }, [])).answer['rows'],
  );
  const total = (reps: StepUsage[][]): StepUsage[] =>
    reps.map((days) => ({
      ms: days.reduce((n, s) => n + s.ms, 0),
      cpuMs: days.reduce((n, s) => n + s.cpuMs, 0),
      peakRssBytes: Math.max(...days.map((s) => s.peakRssBytes)),
      bytesWritten: days.reduce((n, s) => n + s.bytesWritten, 0),
      answer: days[days.length - 1]!.answer,
    }));
  const perDay = (reps: StepUsage[][]) =>
    Array.from({ length: PIPELINE_DAYS }, (_, d) => samplesOf(reps.map((r) => r[d]!.ms)).median);
  const landed = days.flat().reduce((n, f) => n + f.rows, 0);
  return {
    name: 'pipeline',
    title: `incremental pipeline: ${PIPELINE_DAYS} days, ${days.flat().length} files (${count(landed)} rows, a late file), into ${count(rows)} rows; all days`,
    tableRows: rows,
    tableBytes,
    loadAverage: { start, end: loads() },
    peers: [
      { ...figures('tidemark', total(runs.tidemark), null, null), days: perDay(runs.tidemark) },
      {
        ...figures('spark', total(runs.spark), ownSpark, checks['spark']!),
        days: perDay(runs.spark),
      },
    ],
  };
}

/** Copy a day's files into the landing zone (their modification time: now, as files arrive). */
async function land(
  staged: string,
  landing: string,
  files: readonly PipelineFile[],
): Promise<void> {
  for (const f of files) {
    await mkdir(dirname(join(landing, f.key)), { recursive: true });
    await cp(join(staged, f.key), join(landing, f.key));
  }
}

function tidemarkConfig(landing: string, table: string): string {
  return [
    'jobs:',
    '  - name: orders',
    '    source:',
    `      uri: ${JSON.stringify(landing)}`,
    '      format: parquet',
    '      discover: { by: partition, layout: "{yyyy}/{mm}/{dd}" }',
    '    target:',
    `      uri: ${JSON.stringify(table)}`,
    '      mode: merge',
    '      key: [order_id]',
    '      orderBy: updated_at',
    '',
  ].join('\n');
}

/** The built CLI (dist/, as installed), rebuilt when a source file is newer. */
async function tidemarkCli(): Promise<string> {
  const bin = join(REPO, 'dist/cli/bin.js');
  const stale = !existsSync(bin) || (await newestUnder(join(REPO, 'src'))) > statSync(bin).mtimeMs;
  if (stale) {
    progress('building tidemark (npm run build)');
    const { code } = await run('npm', ['run', '--silent', 'build'], 'inherit', REPO);
    if (code !== 0) throw new Error('[bench] npm run build failed');
  }
  return bin;
}

async function newestUnder(dir: string): Promise<number> {
  const { readdir, stat } = await import('node:fs/promises');
  let newest = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) newest = Math.max(newest, (await stat(join(e.parentPath, e.name))).mtimeMs);
  }
  return newest;
}

/** One `tidemark run` in its own process under /usr/bin/time: wall, CPU and peak RSS of the process. */
async function tidemarkRun(cli: string, config: string, table: string): Promise<StepUsage> {
  flushWrites();
  const before = await filesUnder([table]);
  const started = performance.now();
  const { code, stdout, stderr } = await run(
    TIME_BINARY,
    [
      '-f',
      '@@time %U %S %M',
      process.execPath,
      cli,
      'run',
      '-c',
      config,
      '--json',
      '--log-level',
      'warn',
    ],
    'pipe',
  );
  const ms = performance.now() - started;
  if (code !== 0)
    throw new Error(`[bench] tidemark run failed (exit ${code}):\n${stderr.slice(-3000)}`);
  const m = /@@time (\S+) (\S+) (\d+)/.exec(stderr);
  if (!m) throw new Error(`[bench] no /usr/bin/time figures in:\n${stderr.slice(-2000)}`);
  const after = await filesUnder([table]);
  let bytesWritten = 0;
  for (const [path, size] of after) if (before.get(path) !== size) bytesWritten += size;
  const report = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
  return {
    ms,
    cpuMs: (Number(m[1]) + Number(m[2])) * 1000,
    peakRssBytes: Number(m[3]) * 1024,
    bytesWritten,
    answer: report,
  };
}

function run(
  command: string,
  args: string[],
  stderr: 'inherit' | 'pipe',
  cwd = REPO,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', stderr] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout: out, stderr: err }));
  });
}

/** MiB, or KiB below one MiB (a deletion vector and a commit are a few KiB). */
function size(bytes: number): string {
  return bytes < 2 ** 20 ? `${(bytes / 1024).toFixed(1)} KiB` : mib(bytes);
}

function peersTable(opts: PeersBenchOptions, results: readonly WorkloadResult[]): TextTable {
  const rows: string[][] = [];
  for (const r of results) {
    const t = r.peers.find((p) => p.peer === 'tidemark')!;
    for (const p of r.peers) {
      const mine = p.peer === 'tidemark';
      if (p.error !== undefined) {
        rows.push([
          '',
          p.peer,
          'failed',
          '-',
          '-',
          '-',
          '-',
          '-',
          '-',
          '-',
          p.error.slice(0, 80),
          '-',
          '',
        ]);
        continue;
      }
      rows.push([
        mine ? r.title : '',
        p.peer === 'spark' && r.name === 'pipeline' ? 'PySpark job' : p.peer,
        secs(p.ms),
        mine ? '1.00 ×' : times(p.ms / t.ms),
        secs(p.cpuMs),
        mine ? '1.00 ×' : times(p.cpuMs / t.cpuMs),
        mib(p.peakRssBytes),
        mine ? '1.00 ×' : times(p.peakRssBytes / t.peakRssBytes),
        size(p.bytesWritten),
        p.days ? `${secs(samplesOf(p.days).median)}` : '-',
        p.check === null
          ? mine
            ? 'reference'
            : '-'
          : p.check.same
            ? `same ${count(p.check.rows)} rows`
            : `DIFFERS: ${p.check.missing} missing, ${p.check.extra} extra`,
        p.ownRows === null ? '-' : count(p.ownRows),
        mine ? `${r.loadAverage.start.join(' ')} → ${r.loadAverage.end.join(' ')}` : '',
      ]);
    }
  }
  return {
    title: `Beside other tools (scale ${opts.scale}): medians of ${opts.repeat} interleaved repetitions; × = peer / tidemark (above 1: tidemark is faster / smaller)`,
    header: [
      'workload',
      'peer',
      'wall',
      '× tidemark',
      'CPU',
      '×',
      'peak RSS',
      '×',
      'written',
      'median day',
      'rows vs tidemark',
      'own count',
      'load avg (1/5/15 min) start → end',
    ],
    rows,
  };
}

function legend(
  startup: Record<string, { ms: number; warmUpMs: number; version: string }>,
  opts: PeersBenchOptions,
): string {
  return [
    `peers: ${Object.entries(startup)
      .map(
        ([n, s]) =>
          `${n} (${s.version}) started in ${secs(s.ms)}, warm-up MERGE ${secs(s.warmUpMs)}`,
      )
      .join('; ')} — not counted in any step`,
    opts.noSpark
      ? "Spark left out (--no-spark). delta-rs: no deletion vectors (it writes none); predicate with the source's key range."
      : `Spark: local[2], spark.driver.memory ${opts.driverMemory}, 4 shuffle partitions, deletion vectors on. delta-rs: no deletion vectors (it writes none); predicate with the source's key range.`,
    'MERGE steps: read the change file + MERGE + commit. Pipeline: tidemark = one `tidemark run` process per day (Node start-up counted); PySpark job = one call per day in the warm session.',
    "peak RSS: the peer's processes (Python + JVM for Spark; each peak reset before the step, summed). written: bytes of the files the step added to the table (and control table).",
  ].join('\n');
}
