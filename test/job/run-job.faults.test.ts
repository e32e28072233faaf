/**
 * Crash at each step of a batch, then rerun: the table and the job state equal those of one
 * uninterrupted run, with no duplicate rows, in merge and in append mode, for both discovery
 * modes. A crash is an exception thrown from a RunContext hook (fault injection: the hooks
 * stand in for a process dying at that point; the real kill -9 loop is test/cli/kill9.test.ts).
 *
 * Hook points: afterFetch (files fetched, nothing written), afterWrite (data files written and
 * uploaded; in merge mode the batch's tombstone file not yet), beforeCommit (tombstone file
 * written too, log entry not yet), afterCommit (batch committed, run not yet finished). In merge
 * mode `status = 'cancelled'` deletes, and the second batch deletes order 3, so it writes a
 * tombstone file.
 * In `merge+dv` mode the MERGE marks replaced and deleted rows in deletion vectors instead of
 * rewriting files; in `merge+cm+cdf` the table the job creates maps its columns by name and
 * records a change data feed (change files beside the data, DVs too). Every version of the table
 * passes the invariant check after the crash and after the rerun (../helpers/table-check.ts), and
 * the change feed of the rerun table equals that of the uninterrupted one.
 * Sources are on s3rver, so every batch is downloaded into the run's spool folder as in
 * production (and a crashed run must remove it); targets are local folders.
 *
 * Each case is bounded by its own steps (three runs of the job, with the reads between them), at
 * RUN_MS each scaled to the machine (test/helpers/machine.ts), not by one budget for the matrix.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { physicalName } from '../../src/delta/column-mapping.js';
import type { Row } from '../../src/engine/duckdb.js';
import type { RunHooks } from '../../src/job/context.js';
import { LocalStorage } from '../../src/storage/local.js';
import { changeRows } from '../helpers/change-data.js';
import type { JobState } from '../../src/job/state.js';
import { stepBudget } from '../helpers/machine.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  checkTarget,
  closeS3JobEnv,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  orders,
  readTarget,
  run,
  runOutcome,
  sortRows,
  tempDir,
  type OrderRow,
  type TableView,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];
let sourceUri: string;
let sourceStorage: Record<string, unknown>;
const landed: OrderRow[] = [];
/** Limit of one run of the job (three batches) and a read of its table, on a quiet machine, where it takes about 0.5 s. */
const RUN_MS = 10_000;

/** Six files over three days, keys overlapping across batches (2 files per batch: 3 batches). */
async function landSource(): Promise<void> {
  const zone = s3.landingZone('fault-src');
  const { source, prefix } = zone;
  sourceUri = zone.uri;
  sourceStorage = zone.storageConfig;
  const files: Array<[string, OrderRow[]]> = [
    ['2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1], [1, 'placed', 1])],
    ['2025/03/01/b.parquet', orders([3, 'placed', 1], [2, 'paid', 2])],
    ['2025/03/02/c.ndjson', orders([1, 'paid', 2], [4, 'placed', 1])],
    [
      '2025/03/02/d.csv',
      orders([3, 'paid', 2], [5, 'placed', 1], [5, 'paid', 2], [3, 'cancelled', 3]),
    ],
    ['2025/03/03/e.parquet', orders([1, 'shipped', 3], [2, 'shipped', 3])],
    ['2025/03/03/f.ndjson', orders([6, 'placed', 1], [4, 'cancelled', 2])],
  ];
  // Modification times in landing order (whole seconds, an hour ago), so both modes see one order.
  const t0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
  for (const [i, [key, rows]] of files.entries()) {
    await land(source, session, key, rows);
    await s3.setLastModified(prefix + key, new Date(t0 + i * 1000));
    landed.push(...rows);
  }
}

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
  await landSource();
});

afterAll(() => closeS3JobEnv(s3, session, dirs));

type Mode = 'merge' | 'merge+dv' | 'merge+cm+cdf' | 'append';
type Discovery = 'partition' | 'modified';
type Point = keyof RunHooks;
const DELETES = "status = 'cancelled'";

/** Merge mode: the latest row per order, minus the orders whose latest row is a delete. */
function expectedMerged(rows: readonly OrderRow[]): OrderRow[] {
  return expectedLatest(rows).filter((r) => r.status !== 'cancelled');
}

async function setupFor(mode: Mode, discovery: Discovery) {
  const target = await tempDir('fault-t', dirs);
  const discover =
    discovery === 'partition'
      ? { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 }
      : { by: 'modified', settle: '2h' };
  const merge = { ...mergeTarget(target), deleteWhen: DELETES };
  // Every changed file gets a DV, however small or emptied (by default files below 1 MiB, or
  // losing half their rows, are rewritten).
  const dv = { ...merge, deletionVectors: true, rewriteFilesBelow: 0, rewriteDeletedShare: 1 };
  const mappedFeed = { ...dv, columnMapping: 'name', changeDataFeed: true };
  const targets = {
    merge,
    'merge+dv': dv,
    'merge+cm+cdf': mappedFeed,
    append: { uri: target, mode: 'append' },
  };
  const job = { source: { uri: sourceUri, discover }, target: targets[mode], maxFilesPerBatch: 2 };
  return makeConfig(job, sourceStorage);
}

/**
 * The change feed of every commit of the job's table, columns under their logical names (the
 * physical names are random per table), rows in a stable order.
 */
async function changeFeed(
  setup: Awaited<ReturnType<typeof setupFor>>,
): Promise<Array<{ version: number; rows: Row[] }>> {
  const view = await readTarget(session, setup);
  const storage = LocalStorage.at(setup.job.target.uri);
  const logical = new Map(
    view.snapshot!.schema.fields.map((f) => [physicalName(f, 'name'), f.name]),
  );
  const feed: Array<{ version: number; rows: Row[] }> = [];
  for (let version = 1; version <= view.snapshot!.version; version++) {
    const rows = await changeRows(session, storage, version, '_change_type, 1');
    feed.push({
      version,
      rows: rows.map((r) =>
        Object.fromEntries(Object.entries(r).map(([k, v]) => [logical.get(k) ?? k, v])),
      ),
    });
  }
  return feed;
}

/** Hooks that throw at `point` of batch `batch` (0-based). */
function crashAt(point: Point, batch: number): RunHooks {
  const boom = (b: number) => {
    if (b === batch) throw new Error(`injected crash at ${point} of batch ${b}`);
  };
  return { [point]: boom };
}

/** Data files below a local table root, whatever the log says. */
async function parquetFiles(root: string): Promise<string[]> {
  const entries = await fsp.readdir(root, { recursive: true });
  return entries.filter(
    (e) => e.endsWith('.parquet') && !e.startsWith('_delta_log') && !e.startsWith('_tidemark'),
  );
}

/** Tombstone files of the job below a local table root, whatever its state says. */
async function tombstoneFiles(root: string): Promise<string[]> {
  const entries = await fsp.readdir(root, { recursive: true });
  return entries.filter(
    (e) => e.startsWith(`_tidemark${path.sep}tombstones`) && e.endsWith('.parquet'),
  );
}

/**
 * The state minus what differs between two correct runs: the wall-clock time of the last run, and
 * the names and delete times of tombstone files (random names, stamped with the batch's clock).
 */
function comparable(state: JobState): Omit<JobState, 'lastRunAt'> {
  const { lastRunAt: _ignored, ...withLedger } = state;
  // Ledger files (append by modification time) are named by a fresh uuid each: their entries count.
  const rest = withLedger.ledger
    ? {
        ...withLedger,
        ledger: {
          ...withLedger.ledger,
          files: withLedger.ledger.files.map((f) => ({ ...f, path: '<ledger file>' })),
        },
      }
    : withLedger;
  if (!rest.tombstones) return rest;
  const files = rest.tombstones.files.map((f) => ({
    ...f,
    path: '<tombstone file>',
    minDeletedAt: '<time>',
    maxDeletedAt: '<time>',
  }));
  return { ...rest, tombstones: { ...rest.tombstones, files } };
}

const cases: Array<[Mode, Discovery]> = [
  ['merge', 'partition'],
  ['merge', 'modified'],
  ['merge+dv', 'partition'],
  ['merge+cm+cdf', 'modified'],
  ['append', 'partition'],
  ['append', 'modified'],
];

describe.each(cases)('%s mode, %s discovery (fault injection: hook throws)', (mode, discovery) => {
  let reference: TableView;
  let referenceFeed: Array<{ version: number; rows: Row[] }> = [];

  beforeAll(
    async () => {
      const setup = await setupFor(mode, discovery);
      const report = await run(setup);
      expect(report).toMatchObject({ status: 'succeeded', filesLoaded: 6, batches: 3, commits: 3 });
      reference = await readTarget(session, setup);
      expect(reference.rows).toEqual(mode === 'append' ? sortRows(landed) : expectedMerged(landed));
      const check = await checkTarget(session, setup);
      expect(check.problems).toEqual([]);
      if (mode === 'merge+dv' || mode === 'merge+cm+cdf')
        expect(check.versionsWithDv).toBeGreaterThan(0);
      if (mode === 'merge+cm+cdf') {
        referenceFeed = await changeFeed(setup);
        // Updates and deletes happened, so some commit recorded them.
        expect(referenceFeed.flatMap((c) => c.rows.map((r) => r['_change_type']))).toEqual(
          expect.arrayContaining(['update_preimage', 'update_postimage', 'delete']),
        );
        expect(Object.keys(referenceFeed.find((c) => c.rows.length > 0)!.rows[0]!)).toEqual(
          expect.arrayContaining(['order_id', 'status', 'seq', 'rid']),
        );
      }
    },
    stepBudget(1, RUN_MS),
  );

  const points: Point[] = ['afterFetch', 'afterWrite', 'beforeCommit', 'afterCommit'];
  it.each(points.flatMap((p) => [0, 1].map((b) => [p, b] as const)))(
    'a crash at %s of batch %i, then a rerun, gives the table and state of an uninterrupted run (fault injection: hook throws)',
    { timeout: stepBudget(3, RUN_MS) }, // the crashed run, the rerun, the run with nothing new
    async (point, batch) => {
      const setup = await setupFor(mode, discovery);
      const spoolRoot = await tempDir('fault-spool', dirs);
      const crash = await runOutcome(setup, { hooks: crashAt(point, batch), spoolRoot });
      expect(crash.ok).toBe(false);
      expect(!crash.ok && (crash.error as Error).message).toBe(
        `injected crash at ${point} of batch ${batch}`,
      );
      // The crashed run removed its spool folder, downloads and all.
      expect(await fsp.readdir(spoolRoot)).toEqual([]);
      const afterCrash = await readTarget(session, setup);
      const committedBatches = point === 'afterCommit' ? batch + 1 : batch;
      // The failed run's report counts the batches it committed before the crash.
      expect(crash.report).toMatchObject({
        status: 'failed',
        commits: committedBatches,
        filesLoaded: 2 * committedBatches,
      });
      expect(afterCrash.state.batch).toBe(committedBatches);
      // ...and where it left the table: the version its last commit made, or the one it found.
      expect(crash.report.tableVersion).toBe(afterCrash.snapshot?.version ?? null);
      if (point === 'afterWrite' || point === 'beforeCommit') {
        // The crashed batch's data files were uploaded: orphans no snapshot lists.
        const onDisk = await parquetFiles(setup.job.target.uri);
        expect(onDisk.length).toBeGreaterThan(afterCrash.snapshot?.files.length ?? 0);
      }
      expect((await checkTarget(session, setup)).problems).toEqual([]);
      if (mode !== 'append' && batch === 1) {
        // The second batch deletes order 3: its tombstone file is written after the data files.
        const written = point === 'afterFetch' || point === 'afterWrite' ? 0 : 1;
        expect(await tombstoneFiles(setup.job.target.uri)).toHaveLength(written);
      }

      const rerun = await run(setup);
      expect(rerun).toMatchObject({ status: 'succeeded', filesLoaded: 6 - 2 * committedBatches });
      const table = await readTarget(session, setup);
      expect(duplicateRids(table.rows)).toEqual([]);
      expect(table.rows).toEqual(reference.rows);
      expect(table.snapshot!.version).toBe(reference.snapshot!.version);
      expect(comparable(table.state)).toEqual(comparable(reference.state));
      expect((await checkTarget(session, setup)).problems).toEqual([]);
      if (mode === 'merge+cm+cdf') expect(await changeFeed(setup)).toEqual(referenceFeed);
      expect(await run(setup)).toMatchObject({ status: 'nothing-new', commits: 0 });
    },
  );
});
