/**
 * `npm run bench -- small-files` (docs/benchmarks.md, issue 25): many small files in one run.
 *
 *   For CSV (plain) and NDJSON (gzip): 10,000 files of 1 to 100 rows (./small-files-landing.ts),
 *   loaded by tidemark's job (discover by partition, MERGE on event_id, latest ts, one batch)
 *   against a hand-written DuckDB pipeline over the same files: one bulk read of the file list,
 *   the same dedupe, one COPY to one Parquet file. Target ≤ 1.3×. Once each (`--repeat` more),
 *   the two interleaved.
 *   The same job again from an S3 landing zone on the embedded S3 server (loopback), against the
 *   hand-written pipeline that first downloads every object (64 at a time) and then runs the
 *   same COPY; reported with the GET requests per second of the job's fetch.
 *
 * Correctness: the job's table equals the hand-written output (rows and an order-free
 * fingerprint of the data columns, compared as typed values: BIGINT, text, DOUBLE, epoch ms).
 */
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import pLimit from 'p-limit';
import { validateConfig } from '../../src/config/load.js';
import type { RunContext } from '../../src/job/context.js';
import type { RunReport } from '../../src/job/report.js';
import { runJob } from '../../src/job/run-job.js';
import { silentLogger } from '../../src/log/logger.js';
import { withTableScan } from '../../src/engine/scan.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';
import { LocalStorage } from '../../src/storage/local.js';
import { S3Storage } from '../../src/storage/s3.js';
import type { Storage } from '../../src/storage/storage.js';
import { openTable, scanSource } from '../lib/tables.js';
import { startEmbeddedS3 } from '../lib/embedded-s3.js';
import { samplesOf, timed, type Samples } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import {
  count,
  printTables,
  secs,
  times,
  verdict,
  writeJson,
  sqlTable,
  type TextTable,
} from './report.js';
import { progress, withSession } from './session.js';
import {
  EVENT_KEY,
  EVENT_ORDER,
  writeSmallLanding,
  type SmallFormat,
  type SmallLandingSpec,
} from './small-files-landing.js';
import { slowest, traceSql, type SlowSql } from './sql-trace.js';
import { openWorkspace, type Workspace } from './workspace.js';

export interface SmallFilesBenchOptions {
  files: number;
  repeat: number;
  /** Also run from the embedded S3 server. */
  s3: boolean;
  /** One more traced run per format: the slowest statements. */
  trace: boolean;
  formats: SmallFormat[];
  keep: boolean;
  jsonPath: string;
  command: string;
}

const TARGET = 1.3;
const FILES_PER_DAY = 100;
const BASELINE_CONCURRENCY = 64;
const BUCKET = 'bench';

/** One format's figures. */
export interface SmallFormatResult {
  format: SmallFormat;
  files: number;
  rows: number;
  bytes: number;
  handwritten: Samples;
  tidemark: Samples;
  ratio: number;
  /** CPU time of the whole process (DuckDB's threads included) during each run. */
  handwrittenCpu: Samples;
  tidemarkCpu: Samples;
  cpuRatio: number;
  phases: RunReport['phases'];
  fingerprint: Fingerprint;
  verified: boolean;
  sql: SlowSql[] | null;
  s3: SmallS3Result | null;
}

/** The same from S3. */
export interface SmallS3Result {
  handwritten: number;
  tidemark: number;
  ratio: number;
  /** CPU time of the process, the in-process S3 server's included (both sides pay it). */
  handwrittenCpu: number;
  tidemarkCpu: number;
  cpuRatio: number;
  phases: RunReport['phases'];
  /** GET requests the job sent, and per second of its fetch phase. */
  gets: number;
  getsPerSecond: number;
  verified: boolean;
}

interface Fingerprint {
  rows: number;
  hash: string;
}

/** Typed values of the data columns, whatever types each reader chose. */
const FINGERPRINT_SQL = (relation: string) =>
  `SELECT count(*)::BIGINT AS n, sum(hash(event_id::BIGINT, device::VARCHAR, reading::DOUBLE, epoch_ms(ts::TIMESTAMPTZ)))::VARCHAR AS h FROM (${relation})`;

export async function benchSmallFiles(opts: SmallFilesBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('small-files', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  try {
    const results: SmallFormatResult[] = [];
    for (const format of opts.formats) results.push(await benchFormat(ws, format, opts));
    const otherLoad = stopWatch();
    printTables(tables(results, opts));
    process.stdout.write(`${LEGEND}\n${describeOtherLoad(otherLoad)}`);
    await writeJson(opts.jsonPath, {
      benchmark: 'small-files',
      env,
      otherLoad,
      options: opts,
      target: TARGET,
      results,
    });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    if (!results.every((r) => r.verified && (r.s3?.verified ?? true)))
      throw new Error('[bench] small-files results failed verification');
  } finally {
    await ws.dispose();
  }
}

const LEGEND = [
  'tidemark: runJob with a validated config (discover by partition {yyyy}/{mm}/{dd}, format csv or ndjson, MERGE on event_id, latest ts,',
  '  maxFilesPerBatch = the file count: one batch, one commit), silent logger; the CSV types inferred by the job, JSON numbers checked.',
  'hand-written: one DuckDB COPY of read_csv([files], union_by_name) or read_json([files]) with QUALIFY row_number() per event_id',
  '  by ts DESC = 1 to one zstd Parquet file (no lineage, no checks, no stats, no Delta log or state).',
  'S3: the landing zone on the embedded S3 server (s3rver, loopback), the table local; the hand-written side downloads every object',
  `  (${BASELINE_CONCURRENCY} at a time) and then runs the same COPY over the downloads.`,
].join('\n');

function tables(results: readonly SmallFormatResult[], opts: SmallFilesBenchOptions): TextTable[] {
  const out: TextTable[] = [
    {
      title: `small files: ${count(opts.files)} files of 1-100 rows, one run (target ≤ ${TARGET} ×)`,
      header: [
        'format',
        'rows',
        'hand-written',
        'tidemark',
        'ratio',
        'target',
        'CPU hand',
        'CPU tidemark',
        'CPU ratio',
        'list',
        'fetch',
        'load',
        'dedupe',
        'merge',
        'commit',
        'verified',
      ],
      rows: results.map((r) => [
        r.format,
        count(r.rows),
        secs(r.handwritten.median),
        secs(r.tidemark.median),
        times(r.ratio),
        verdict(r.ratio <= TARGET),
        secs(r.handwrittenCpu.median),
        secs(r.tidemarkCpu.median),
        times(r.cpuRatio),
        ...(['list', 'fetch', 'load', 'dedupe', 'merge', 'commit'] as const).map((p) =>
          secs(r.phases[p]),
        ),
        r.verified ? 'yes' : 'NO',
      ]),
    },
  ];
  const s3 = results.filter((r) => r.s3 !== null);
  if (s3.length > 0) {
    out.push({
      title: 'small files from the embedded S3 server (loopback)',
      header: [
        'format',
        'hand-written',
        'tidemark',
        'ratio',
        'target',
        'CPU ratio',
        'GETs',
        'GETs/s (fetch)',
        'list',
        'fetch',
        'load',
        'verified',
      ],
      rows: s3.map((r) => [
        r.format,
        secs(r.s3!.handwritten),
        secs(r.s3!.tidemark),
        times(r.s3!.ratio),
        verdict(r.s3!.ratio <= TARGET),
        times(r.s3!.cpuRatio),
        count(r.s3!.gets),
        count(Math.round(r.s3!.getsPerSecond)),
        secs(r.s3!.phases.list),
        secs(r.s3!.phases.fetch),
        secs(r.s3!.phases.load),
        r.s3!.verified ? 'yes' : 'NO',
      ]),
    });
  }
  for (const r of results)
    if (r.sql) out.push(sqlTable(`slowest statements of a traced ${r.format} run`, r.sql));
  return out;
}

function smallJob(
  ws: Workspace,
  name: string,
  format: SmallFormat,
  source: string,
  target: string,
  files: number,
  storage: Record<string, unknown> = {},
) {
  const config = validateConfig({
    storage: { singleWriter: true, ...storage },
    jobs: [
      {
        name,
        source: {
          uri: source,
          format: format === 'csv' ? 'csv' : 'ndjson',
          discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
        },
        target: { uri: target, mode: 'merge', key: [EVENT_KEY], orderBy: EVENT_ORDER },
        maxFilesPerBatch: files,
        maxBytesPerBatch: '64GiB',
      },
    ],
  });
  const ctx: RunContext = {
    storage: config.storage,
    logger: silentLogger(),
    spoolRoot: ws.dir,
    tty: false,
  };
  return { job: config.jobs[0]!, ctx };
}

async function runSmallJob(
  j: ReturnType<typeof smallJob>,
): Promise<{ ms: number; cpuMs: number; report: RunReport }> {
  const { ms, cpuMs, value } = await timed(() => runJob(j.job, j.ctx));
  if (!value.ok) throw value.error;
  return { ms, cpuMs, report: value.report };
}

function readerSql(format: SmallFormat, paths: readonly string[]): string {
  const list = `[${paths.map(str).join(', ')}]`;
  return format === 'csv'
    ? `read_csv(${list}, union_by_name = true)`
    : `read_json(${list}, format = 'newline_delimited')`;
}

function handwrittenSql(format: SmallFormat, paths: readonly string[], out: string): string {
  const latest = `QUALIFY row_number() OVER (PARTITION BY ${ident(EVENT_KEY)} ORDER BY ${ident(EVENT_ORDER)} DESC) = 1`;
  return `COPY (SELECT * FROM ${readerSql(format, paths)} ${latest}) TO ${str(out)} (FORMAT parquet, COMPRESSION zstd)`;
}

async function tableFingerprint(session: DuckSession, storage: Storage): Promise<Fingerprint> {
  const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
  if (!snapshot) throw new Error(`[bench] no Delta table at ${storage.uri}`);
  const row = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.one(FINGERPRINT_SQL(relation)),
  );
  return { rows: Number(row?.['n'] ?? 0), hash: String(row?.['h'] ?? '') };
}

async function parquetFingerprint(session: DuckSession, path: string): Promise<Fingerprint> {
  const row = await session.one(FINGERPRINT_SQL(`SELECT * FROM read_parquet(${str(path)})`));
  return { rows: Number(row?.['n'] ?? 0), hash: String(row?.['h'] ?? '') };
}

async function filesBelow(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

async function benchFormat(
  ws: Workspace,
  format: SmallFormat,
  opts: SmallFilesBenchOptions,
): Promise<SmallFormatResult> {
  const tag = format.replace('.', '-');
  const spec: SmallLandingSpec = {
    root: ws.path(`landing-${tag}`),
    format,
    files: opts.files,
    filesPerDay: FILES_PER_DAY,
  };
  progress(`writing ${count(opts.files)} ${format} files`);
  const written = await writeSmallLanding(spec);
  const paths = await filesBelow(spec.root);
  const bytes = (await Promise.all(paths.map((p) => stat(p)))).reduce((n, s) => n + s.size, 0);
  const hand: number[] = [];
  const tide: number[] = [];
  const handCpu: number[] = [];
  const tideCpu: number[] = [];
  let report: RunReport | null = null;
  let handOut = '';
  for (let rep = 1; rep <= opts.repeat; rep++) {
    handOut = ws.path(`hand-${tag}-${rep}.parquet`);
    const h = await timed(() => withSession((s) => s.run(handwrittenSql(format, paths, handOut))));
    hand.push(h.ms);
    handCpu.push(h.cpuMs);
    const t = await runSmallJob(
      smallJob(ws, 'events', format, spec.root, ws.path(`table-${tag}-${rep}`), opts.files),
    );
    tide.push(t.ms);
    tideCpu.push(t.cpuMs);
    report = t.report;
    progress(
      `(${format} ${rep}/${opts.repeat}) hand-written ${secs(h.ms)} (CPU ${secs(h.cpuMs)}), tidemark ${secs(t.ms)} (CPU ${secs(t.cpuMs)})`,
    );
  }
  const [expected, actual] = await withSession(async (s) => [
    await parquetFingerprint(s, handOut),
    await tableFingerprint(s, LocalStorage.at(ws.path(`table-${tag}-${opts.repeat}`))),
  ]);
  let sql: SlowSql[] | null = null;
  if (opts.trace) {
    const traced = await traceSql(() =>
      runSmallJob(
        smallJob(ws, 'events', format, spec.root, ws.path(`table-${tag}-traced`), opts.files),
      ),
    );
    sql = slowest(traced.statements, 10);
  }
  const s3 = opts.s3 ? await benchFromS3(ws, format, spec, paths, expected) : null;
  const handwritten = samplesOf(hand);
  const tidemark = samplesOf(tide);
  const handwrittenCpu = samplesOf(handCpu);
  const tidemarkCpu = samplesOf(tideCpu);
  return {
    format,
    files: written.length,
    rows: written.reduce((n, f) => n + f.rows, 0),
    bytes,
    handwritten,
    tidemark,
    ratio: tidemark.median / handwritten.median,
    handwrittenCpu,
    tidemarkCpu,
    cpuRatio: tidemarkCpu.median / handwrittenCpu.median,
    phases: report!.phases,
    fingerprint: actual,
    verified:
      actual.rows === expected.rows &&
      actual.hash === expected.hash &&
      report!.filesLoaded === opts.files &&
      report!.commits === 1,
    sql,
    s3,
  };
}

async function benchFromS3(
  ws: Workspace,
  format: SmallFormat,
  spec: SmallLandingSpec,
  paths: readonly string[],
  expected: Fingerprint,
): Promise<SmallS3Result> {
  const tag = format.replace('.', '-');
  const server = await startEmbeddedS3({ buckets: [BUCKET], directory: ws.path(`s3-${tag}`) });
  const saved = {
    id: process.env['AWS_ACCESS_KEY_ID'],
    secret: process.env['AWS_SECRET_ACCESS_KEY'],
  };
  process.env['AWS_ACCESS_KEY_ID'] = server.credentials.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = server.credentials.secretAccessKey;
  const endpoint = { endpoint: server.endpoint, region: server.region, forcePathStyle: true };
  const bucket = new S3Storage({ bucket: BUCKET, ...endpoint, credentials: server.credentials });
  try {
    progress(`(${format} S3) uploading ${count(paths.length)} files to the embedded S3 server`);
    const keys = paths.map((p) => `landing/${relative(spec.root, p).split('\\').join('/')}`);
    const limit = pLimit(BASELINE_CONCURRENCY);
    await Promise.all(keys.map((k, i) => limit(() => bucket.upload(k, paths[i]!))));
    const down = ws.path(`down-${tag}`);
    await mkdir(down, { recursive: true });
    const out = ws.path(`hand-s3-${tag}.parquet`);
    const h = await timed(async () => {
      const local = keys.map((k, i) => join(down, `${i}-${k.split('/').pop()}`));
      await Promise.all(keys.map((k, i) => limit(() => bucket.download(k, local[i]!))));
      await withSession((s) => s.run(handwrittenSql(format, local, out)));
    });
    const t = await runSmallJob(
      smallJob(
        ws,
        'events',
        format,
        `s3://${BUCKET}/landing/`,
        ws.path(`table-s3-${tag}`),
        paths.length,
        endpoint,
      ),
    );
    progress(
      `(${format} S3) hand-written ${secs(h.ms)} (CPU ${secs(h.cpuMs)}), tidemark ${secs(t.ms)} (CPU ${secs(t.cpuMs)})`,
    );
    const actual = await withSession((s) =>
      tableFingerprint(s, LocalStorage.at(ws.path(`table-s3-${tag}`))),
    );
    const gets = t.report.requests?.get ?? 0;
    return {
      handwritten: h.ms,
      tidemark: t.ms,
      ratio: t.ms / h.ms,
      handwrittenCpu: h.cpuMs,
      tidemarkCpu: t.cpuMs,
      cpuRatio: t.cpuMs / h.cpuMs,
      phases: t.report.phases,
      gets,
      getsPerSecond: gets / Math.max(0.001, t.report.phases.fetch / 1000),
      verified:
        actual.rows === expected.rows &&
        actual.hash === expected.hash &&
        t.report.filesLoaded === paths.length,
    };
  } finally {
    bucket.client.destroy();
    process.env['AWS_ACCESS_KEY_ID'] = saved.id;
    process.env['AWS_SECRET_ACCESS_KEY'] = saved.secret;
    if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
    if (saved.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
    await server.stop();
  }
}
