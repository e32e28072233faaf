/**
 * Benchmarks: `npm run bench -- merge`, `npm run bench -- ingest` (targets in
 * docs/benchmarks.md), `npm run bench -- memory` (a batch larger than DuckDB's memory limit: peak RSS per
 * limit), `npm run bench -- backfill` (sharded backfills, docs/scaling.md), `npm run bench -- peers`
 * (the same work by delta-rs and Spark with Delta Lake; installs its Python environment),
 * `npm run bench -- small-files` (many small CSV and JSON files in one run) and
 * `npm run bench -- listing` (a run with nothing new over a million objects).
 * Each prints its figures as ratios against a baseline measured in the same run, and writes
 * the full result as JSON under `.bench/results/`. Scratch files live in `.bench/` and are
 * removed at the end. `--rows N` runs smaller for a quick check.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { benchMerge } from './bench/merge.js';
import { benchMergeScd2 } from './bench/merge-scd2.js';
import { benchIngest } from './bench/ingest.js';
import { benchMemory, memoryRun } from './bench/memory.js';
import { benchBackfill } from './bench/backfill.js';
import { WORKLOADS, benchPeers, type WorkloadName } from './bench/peers.js';
import { SEED_SCALE_DIR, benchSeedScale } from './bench/seed-scale.js';
import { seedNight } from './bench/seed-night.js';
import { benchSmallFiles } from './bench/small-files.js';
import { benchListing } from './bench/listing.js';
import type { SmallFormat } from './bench/small-files-landing.js';
import { BENCH_ROOT } from './bench/workspace.js';
import type { DeletionVectorSetting } from '../src/engine/merge/write-mode.js';
import { parseSize } from '../src/config/units.js';

const USAGE = `usage: npm run bench -- <merge|ingest|memory|backfill|peers|seed-scale|small-files|listing> [options]

  merge   MERGE of changed orders into a clustered table vs a full rewrite
    --rows N       table rows (default 10000000)
    --files N      data files in the table (default 100)
    --changes N    changed rows per batch (default 10000, or rows/1000 with --rows)
    --no-lean      skip the lean DuckDB COPY lower bound
    --partition-by C  partition the table by column C (order_date: one partition per day;
                   implies --no-lean, whose COPY reads the files without their partition values)
    --repeat N     interleaved repetitions, medians reported (default 3)
    --deletion-vectors auto|on|off
                   the MERGE's target.deletionVectors (default auto: the table has them)
    --trace        list every statement of the last MERGE of each batch, in order, with its time
    --mode scd2    instead: the scattered changes closing versions in a history table (scd2
                   mode) vs the same MERGE in merge mode on that table (--rows, --files,
                   --changes, --repeat, --trace apply; --trace lists each mode's last step)

  ingest  tidemark job vs a hand-written DuckDB pipeline, incremental and no-op runs, and
          what checksums cost (the initial load from and to S3 on the embedded server)
    --rows N       rows in the landing zone (default 5000000)
    --files N      landing files (default 200)
    --commits N    commits of the no-op run's table (default 200)
    --repeat N     interleaved repetitions of (a) and (b), medians reported (default 3)
    --what-if-rows N  (b) again had the loads written files of N rows (default 0 = skip)

  memory  one batch several times DuckDB's memory limit, loaded by the job in a child
          process per limit (unlimited first, as the baseline): time and peak RSS
    --rows N       rows of the batch (default 5000000, about 1.4 GiB in DuckDB)
    --files N      landing files (default 50)
    --limits L,…   engine.memoryLimit values (default 256MiB,1GiB,3GiB)
    --repeat N     interleaved repetitions, medians reported (default 3)

  backfill  a backfill of daily partitions by 1, 2 and 4 shards (one process each)
    --days N           day partitions in the range (default 90)
    --files N          files per day (default 4)
    --rows N           rows per file (default 5000)
    --shards LIST      shard counts, the first the baseline (default 1,2,4)
    --partitions-per-commit N  whole partitions per commit of every shard (default 1)
    --repeat N         interleaved repetitions, medians reported (default 2)

  peers   the same MERGEs and incremental pipeline by tidemark, delta-rs and Spark with Delta
          Lake (local[2], deletion vectors), interleaved; needs Python 3.10+ and Java 17+, and
          PyPI and Maven Central on the first run (.bench/python/)
    --scale X      share of the issue's sizes (default 1: 10M and 50M rows; 0.1 for a quick run)
    --only LIST    workloads (default all): ${WORKLOADS.join(',')}
    --repeat N     interleaved repetitions, medians reported (default 3)
    --driver-memory M  spark.driver.memory (default 4g)
    --no-spark     leave Spark out (tidemark and delta-rs only; not with the pipeline)

  seed-scale  the tutorial's 500M-row orders table (built once, resumable, kept in
          .bench/seed-scale/) and one night (0.5 % of the keys changed, scattered, + 0.1 % new)
          through the job, beside a full reload measured on a sample and extrapolated
    --rows N       orders in the table (default 500000000)
    --sample X     share of the rows the full reload is measured on (default 0.1)
    --dir PATH     where the tables are kept (default .bench/seed-scale)

  small-files  many small files (CSV, gzip NDJSON) in one run vs a hand-written DuckDB bulk read
    --files N          files per format (default 10000), 1-100 rows each
    --formats LIST     csv,ndjson.gz (default both)
    --repeat N         interleaved repetitions, medians reported (default 1)
    --no-s3            skip the runs from the embedded S3 server
    --trace            one more traced run per format: the slowest statements

  listing  a run with nothing new over many objects (discover by modified, local folder):
           time, peak RSS, LIST requests
    --objects N        objects in the landing zone (default 1000000)
    --incremental      the job sets discover.incrementalListing (the keys sort by time)
    --repeat N         no-op runs measured, medians reported (default 3)

  common
    --keep         keep the scratch folder under .bench/
    --json PATH    result file (default .bench/results/<bench>-<time>.json)
`;

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value.replaceAll('_', ''));
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`[bench] --${name} must be a positive integer, got ${value}`);
  return n;
}

function dvSetting(value: string): DeletionVectorSetting {
  if (value === 'auto' || value === 'on' || value === 'off') return value;
  throw new Error(`[bench] --deletion-vectors must be auto, on or off, got ${value}`);
}

/** A comma-separated list of sizes (`256MiB,1GiB`) in bytes. */
function sizes(name: string, value: string): number[] {
  return value.split(',').map((v) => {
    const bytes = parseSize(v);
    if (bytes === null || bytes <= 0)
      throw new Error(`[bench] --${name} must list sizes such as 256MiB or 1GiB, got ${v}`);
    return bytes;
  });
}

function smallFormats(value: string): SmallFormat[] {
  return value.split(',').map((v) => {
    const f = v.trim();
    if (f === 'csv' || f === 'ndjson.gz') return f;
    throw new Error(`[bench] --formats lists csv and ndjson.gz, got ${v}`);
  });
}

function resultPath(bench: string, given: string | undefined): string {
  const stamp = new Date().toISOString().replace(/[-:.]/g, '').slice(0, 15);
  return given ?? join(BENCH_ROOT, 'results', `${bench}-${stamp}.json`);
}

async function main(argv: string[]): Promise<void> {
  // The child process of `memory`: one load, its figures as a JSON line (not for direct use).
  if (argv[0] === 'memory-run') return memoryRun(argv.slice(1));
  // The child process of `seed-scale`: the night's run, its figures as a JSON line.
  if (argv[0] === 'seed-night') return seedNight(argv.slice(1));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      rows: { type: 'string' },
      files: { type: 'string' },
      changes: { type: 'string' },
      commits: { type: 'string' },
      repeat: { type: 'string' },
      days: { type: 'string' },
      shards: { type: 'string' },
      'partitions-per-commit': { type: 'string' },
      'what-if-rows': { type: 'string' },
      limits: { type: 'string' },
      scale: { type: 'string' },
      only: { type: 'string' },
      'driver-memory': { type: 'string' },
      sample: { type: 'string' },
      dir: { type: 'string' },
      'no-lean': { type: 'boolean', default: false },
      'no-s3': { type: 'boolean', default: false },
      'no-spark': { type: 'boolean', default: false },
      trace: { type: 'boolean', default: false },
      formats: { type: 'string' },
      objects: { type: 'string' },
      incremental: { type: 'boolean', default: false },
      'partition-by': { type: 'string' },
      'deletion-vectors': { type: 'string', default: 'auto' },
      mode: { type: 'string', default: 'merge' },
      keep: { type: 'boolean', default: false },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const bench = positionals[0];
  const command = `npm run bench -- ${argv.join(' ')}`;
  if (
    values.help ||
    ![
      'merge',
      'ingest',
      'memory',
      'backfill',
      'peers',
      'seed-scale',
      'small-files',
      'listing',
    ].includes(bench ?? '')
  ) {
    process.stdout.write(USAGE);
    if (!values.help) process.exitCode = 2;
    return;
  }
  if (bench === 'backfill') {
    await benchBackfill({
      days: positiveInt('days', values.days, 90),
      filesPerDay: positiveInt('files', values.files, 4),
      rowsPerFile: positiveInt('rows', values.rows, 5000),
      shards: (values.shards ?? '1,2,4').split(',').map((n) => positiveInt('shards', n.trim(), 1)),
      partitionsPerCommit: positiveInt('partitions-per-commit', values['partitions-per-commit'], 1),
      repeat: positiveInt('repeat', values.repeat, 2),
      keep: values.keep,
      jsonPath: resultPath('backfill', values.json),
      command,
    });
    return;
  }
  if (bench === 'listing') {
    await benchListing({
      objects: positiveInt('objects', values.objects, 1_000_000),
      incremental: values.incremental,
      repeat: positiveInt('repeat', values.repeat, 3),
      keep: values.keep,
      jsonPath: resultPath('listing', values.json),
      command,
    });
    return;
  }
  if (bench === 'small-files') {
    await benchSmallFiles({
      files: positiveInt('files', values.files, 10_000),
      repeat: positiveInt('repeat', values.repeat, 1),
      s3: !values['no-s3'],
      trace: values.trace,
      formats: smallFormats(values.formats ?? 'csv,ndjson.gz'),
      keep: values.keep,
      jsonPath: resultPath('small-files', values.json),
      command,
    });
    return;
  }
  if (bench === 'seed-scale') {
    const sample = Number(values.sample ?? '0.1');
    if (!(sample > 0 && sample < 1))
      throw new Error(`[bench] --sample must be in (0, 1), got ${values.sample}`);
    await benchSeedScale({
      rows: positiveInt('rows', values.rows, 500_000_000),
      sample,
      dir: values.dir ?? SEED_SCALE_DIR,
      jsonPath: resultPath('seed-scale', values.json),
      command,
    });
    return;
  }
  if (bench === 'peers') {
    const scale = Number(values.scale ?? '1');
    if (!(scale > 0 && scale <= 1))
      throw new Error(`[bench] --scale must be in (0, 1], got ${values.scale}`);
    const only = (values.only ?? WORKLOADS.join(',')).split(',').map((w) => w.trim());
    const unknown = only.filter((w) => !(WORKLOADS as readonly string[]).includes(w));
    if (unknown.length > 0)
      throw new Error(
        `[bench] --only: unknown workload ${unknown.join(', ')} (known: ${WORKLOADS.join(', ')})`,
      );
    if (values['no-spark'] && only.includes('pipeline'))
      throw new Error(
        '[bench] --no-spark: the pipeline workload is the PySpark job; pick --only merge-…',
      );
    await benchPeers({
      scale,
      repeat: positiveInt('repeat', values.repeat, 3),
      only: only as WorkloadName[],
      driverMemory: values['driver-memory'] ?? '4g',
      noSpark: values['no-spark'],
      keep: values.keep,
      jsonPath: resultPath('peers', values.json),
      command,
    });
    return;
  }
  if (bench === 'merge') {
    const rows = positiveInt('rows', values.rows, 10_000_000);
    const sizes = {
      rows,
      files: positiveInt('files', values.files, 100),
      changes: positiveInt(
        'changes',
        values.changes,
        values.rows === undefined ? 10_000 : Math.max(100, Math.round(rows / 1000)),
      ),
      insertShare: 0.05,
    };
    if (values.mode !== 'merge' && values.mode !== 'scd2')
      throw new Error(`[bench] --mode must be merge or scd2, got ${values.mode}`);
    if (values.mode === 'scd2') {
      await benchMergeScd2({
        ...sizes,
        repeat: positiveInt('repeat', values.repeat, 3),
        trace: values.trace,
        keep: values.keep,
        jsonPath: resultPath('merge-scd2', values.json),
        command,
      });
      return;
    }
    await benchMerge({
      ...sizes,
      lean: !values['no-lean'] && values['partition-by'] === undefined,
      partitionBy:
        values['partition-by'] === undefined
          ? []
          : values['partition-by'].split(',').map((c) => c.trim()),
      deletionVectors: dvSetting(values['deletion-vectors']),
      repeat: positiveInt('repeat', values.repeat, 3),
      trace: values.trace,
      keep: values.keep,
      jsonPath: resultPath('merge', values.json),
      command,
    });
    return;
  }
  if (bench === 'memory') {
    await benchMemory({
      rows: positiveInt('rows', values.rows, 5_000_000),
      files: positiveInt('files', values.files, 50),
      limits: sizes('limits', values.limits ?? '256MiB,1GiB,3GiB'),
      repeat: positiveInt('repeat', values.repeat, 3),
      keep: values.keep,
      jsonPath: resultPath('memory', values.json),
      command,
    });
    return;
  }
  const rows = positiveInt('rows', values.rows, 5_000_000);
  await benchIngest({
    rows,
    files: positiveInt('files', values.files, 200),
    commits: positiveInt('commits', values.commits, 200),
    repeat: positiveInt('repeat', values.repeat, 3),
    whatIfRows:
      values['what-if-rows'] === undefined || values['what-if-rows'] === '0'
        ? 0
        : positiveInt('what-if-rows', values['what-if-rows'], 0),
    keep: values.keep,
    jsonPath: resultPath('ingest', values.json),
    command,
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
