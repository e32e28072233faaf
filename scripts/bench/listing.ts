/**
 * `npm run bench -- listing` (docs/benchmarks.md, issue 25, item 3): a run that finds nothing
 * new in a landing zone of 1,000,000 objects, discovering by modification time.
 *
 * The zone: `--objects` zero-byte NDJSON files (a zero-byte file holds no rows) in folders of
 * 1,000, all older than the job's `discover.start`, and one file after it. The first run loads
 * that file (the table is created); then `--repeat` runs that find nothing new are measured:
 * wall time, CPU time, peak RSS (the process's high-water mark reset before each run) and the
 * LIST requests discovery sent (pages of 1,000 keys, as S3 returns them). Memory is bounded when
 * the objects older than the window are only counted, never kept. With `--incremental` the job
 * sets `discover.incrementalListing` (the keys, `batch-NNNNN/…` then `new/…`, sort by time): the
 * first run records the newest old key, and the runs after it list only the keys after it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { validateConfig } from '../../src/config/load.js';
import type { RunContext } from '../../src/job/context.js';
import type { RunReport } from '../../src/job/report.js';
import { runJob } from '../../src/job/run-job.js';
import { silentLogger } from '../../src/log/logger.js';
import { samplesOf, timed, type Samples } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import { count, mib, printTables, secs, writeJson } from './report.js';
import { progress } from './session.js';
import { openWorkspace, type Workspace } from './workspace.js';

export interface ListingBenchOptions {
  objects: number;
  /** The job lists incrementally (`discover.incrementalListing`): the zone's keys sort by time. */
  incremental: boolean;
  repeat: number;
  keep: boolean;
  jsonPath: string;
  command: string;
}

const PER_FOLDER = 1000;
const WRITERS = 64;

export interface ListingResult {
  objects: number;
  buildMs: number;
  firstRun: { ms: number; filesLoaded: number };
  runs: Samples;
  cpu: Samples;
  peakRssBytes: number[];
  listRequests: number;
  verified: boolean;
}

export async function benchListing(opts: ListingBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('listing', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  try {
    const result = await measure(ws, opts);
    const otherLoad = stopWatch();
    printTables([
      {
        title: `a run with nothing new over ${count(result.objects)} objects (discover by modified${opts.incremental ? ', incrementalListing' : ''}, local folder)`,
        header: [
          'objects',
          'no-op run',
          'CPU time',
          'peak RSS',
          'LIST requests',
          'first run (loads 1 file)',
          'verified',
        ],
        rows: [
          [
            count(result.objects),
            secs(result.runs.median),
            secs(result.cpu.median),
            mib(Math.max(...result.peakRssBytes)),
            count(result.listRequests),
            secs(result.firstRun.ms),
            result.verified ? 'yes' : 'NO',
          ],
        ],
      },
    ]);
    process.stdout.write(
      `medians of ${opts.repeat} runs; peak RSS is the largest of the runs (the process's high-water mark, reset before each)\n${describeOtherLoad(otherLoad)}`,
    );
    await writeJson(opts.jsonPath, { benchmark: 'listing', env, otherLoad, options: opts, result });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
    if (!result.verified) throw new Error('[bench] listing results failed verification');
  } finally {
    await ws.dispose();
  }
}

function listingJob(ws: Workspace, start: string, incrementalListing: boolean) {
  const config = validateConfig({
    storage: { singleWriter: true },
    jobs: [
      {
        name: 'events',
        source: {
          uri: ws.path('landing'),
          format: 'ndjson',
          discover: { by: 'modified', start, incrementalListing },
        },
        target: { uri: ws.path('table'), mode: 'merge', key: ['id'], orderBy: 'seq' },
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

async function run(
  j: ReturnType<typeof listingJob>,
): Promise<{ ms: number; cpuMs: number; peak: number; report: RunReport }> {
  const { ms, cpuMs, peakRss, value } = await timed(() => runJob(j.job, j.ctx));
  if (!value.ok) throw value.error;
  return { ms, cpuMs, peak: peakRss.bytes, report: value.report };
}

async function measure(ws: Workspace, opts: ListingBenchOptions): Promise<ListingResult> {
  progress(`writing ${count(opts.objects)} objects`);
  const built = await timed(async () => {
    const limit = pLimit(WRITERS);
    const folders = Math.ceil(opts.objects / PER_FOLDER);
    for (let f = 0; f < folders; f++) {
      const dir = ws.path('landing', `batch-${String(f).padStart(5, '0')}`);
      await mkdir(dir, { recursive: true });
      const n = Math.min(PER_FOLDER, opts.objects - f * PER_FOLDER);
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          limit(() => writeFile(join(dir, `e-${String(i).padStart(4, '0')}.ndjson`), '')),
        ),
      );
      if (f % 100 === 99) progress(`  ${count((f + 1) * PER_FOLDER)}`);
    }
  });
  progress(`  ${secs(built.ms)}`);
  // Every object so far is older than the job's start; one file after it creates the table.
  await new Promise((r) => setTimeout(r, 1100));
  const start = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 1100));
  await mkdir(ws.path('landing', 'new'), { recursive: true });
  await writeFile(ws.path('landing', 'new', 'first.ndjson'), '{"id":1,"seq":1}\n');
  const j = listingJob(ws, start, opts.incremental);
  progress('first run (loads the one new file)');
  const first = await run(j);
  progress(`  ${secs(first.ms)}, ${first.report.filesLoaded} file loaded`);
  const runs = [];
  for (let i = 0; i < opts.repeat; i++) {
    const r = await run(j);
    progress(
      `no-op run ${i + 1}/${opts.repeat}: ${secs(r.ms)}, peak RSS ${mib(r.peak)}, ${r.report.listRequests ?? '?'} LIST requests`,
    );
    runs.push(r);
  }
  return {
    objects: opts.objects,
    buildMs: built.ms,
    firstRun: { ms: first.ms, filesLoaded: first.report.filesLoaded },
    runs: samplesOf(runs.map((r) => r.ms)),
    cpu: samplesOf(runs.map((r) => r.cpuMs)),
    peakRssBytes: runs.map((r) => r.peak),
    listRequests: runs[0]?.report.listRequests ?? 0,
    verified:
      first.report.filesLoaded === 1 &&
      runs.every((r) => r.report.status === 'nothing-new' && r.report.commits === 0),
  };
}
