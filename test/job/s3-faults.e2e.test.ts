/**
 * The storage layer's acceptance at the job level (fault injection: a proxy in front of s3rver).
 * Source AND target are on s3rver behind the fault-injecting proxy, which answers conditional
 * PUTs like S3 (`emulateConditionals`), so the target's commits are real put-if-absent and the
 * job runs with `singleWriter: false`. The job merges order events (key, orderBy, deleteWhen:
 * deletes and tombstone files) from a landing zone of CSV and Parquet files, one or two files per
 * batch, so each run makes several commits.
 *
 * - 12 %: a day lands before each of 20 runs, then a run with nothing new; every request of
 *   source and target draws a seeded fault of any kind. At least 95 % of runs succeed, a failure
 *   is transient (exit 4) and is rerun, and the final table and job state equal those of the same
 *   landing loaded without faults.
 * - 30 %: a day lands before each of 5 runs; every run succeeds or fails transiently. To see
 *   failures part-way, odd runs allow 3 attempts per request instead of 6, and in one run the
 *   store goes down for good after its first commit. Every version holds whole batches only (its
 *   rows are the merge of exactly the files its state counts), a failed run's report counts the
 *   batches it committed, and a rerun converges to the unfaulted table.
 * - A store that fails every request, or accepts connections and never answers: the run exits 4
 *   in bounded time, says what it tried and how often, and leaves table and watermark untouched.
 * - The CLI's run JSON has the request counts, and on such a failure `error.retryable: true`.
 *
 * Storage timeouts are short (idle 200 ms on a quiet machine) so a silent request costs little; the backoff is
 * shortened through the `openStorage` seam (the config has no field for it).
 */
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_STORAGE_UNAVAILABLE, exitCodeFor } from '../../src/cli/exit-codes.js';
import { main, type CliIO } from '../../src/cli/main.js';
import { errorInfo } from '../../src/cli/output.js';
import { StorageError } from '../../src/errors.js';
import type { RunContext } from '../../src/job/context.js';
import type { JobOutcome, RunReport } from '../../src/job/report.js';
import { openTarget } from '../../src/job/open.js';
import { readJobState, type JobState } from '../../src/job/state.js';
import { readTable } from '../../src/engine/scan.js';
import { silentLogger } from '../../src/log/logger.js';
import { openStorage, type S3EndpointOptions } from '../../src/storage/uri.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { scaled } from '../helpers/machine.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';
import { prng } from '../../scripts/lib/prng.js';
import {
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
  runOutcome,
  sortRows,
  tempDir,
  type OrderRow,
  type TableView,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
let proxy: FaultProxy;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv({ threads: 1 }));
  proxy = await startFaultProxy({ target: s3.endpoint, emulateConditionals: true });
});

afterAll(async () => {
  await proxy?.stop();
  await closeS3JobEnv(s3, session, dirs);
});

/**
 * Short storage timeouts: a silent request costs 200 ms, not S3's 30 s. Scaled to the machine
 * (test/helpers/machine.ts) when a job's storage is set up: fixed, on a machine running other work
 * beside the suite a plain answer of s3rver would wait out 200 ms too, the same request time out
 * six times in a row and the run fail without a fault (4 of 21 runs at load 24).
 */
const timeouts = () => ({
  connectTimeout: scaled(500),
  requestTimeout: scaled(2_000),
  idleTimeout: scaled(200),
});
/** Backoffs of the faulted runs (milliseconds): small, so 20 runs at 12 % stay quick. */
const FAST_BACKOFF: S3EndpointOptions = { retryBaseDelayMs: 10, retryMaxDelayMs: 200 };
const DELETES = "status = 'cancelled'";
/**
 * About 45 s on a quiet 2-core machine; far more while other test files share the cores, so the
 * limit is scaled to the machine too (the 12 % test took 311 s at load 25, all runs passing).
 */
const LONG_TEST_MS = scaled(300_000);
const FILES_PER_DAY = ['a.csv', 'b.parquet', 'c.csv'] as const;

/**
 * Order events: a pool of orders, each with its own increasing `seq` (steps of 10, never a tie),
 * some of them late (a seq below the order's latest: stale, or buried by a delete's tombstone),
 * about one in eight a delete (status cancelled).
 */
class EventFeed {
  private readonly random: () => number;
  private readonly seqs = new Map<number, { max: number; used: Set<number> }>();
  constructor(
    seed: number,
    private readonly ordersInPool: number,
  ) {
    this.random = prng(seed);
  }

  /** `n` events. */
  next(n: number): OrderRow[] {
    const triples: Array<[number, string, number]> = [];
    for (let i = 0; i < n; i++) {
      const id = 1 + Math.floor(this.random() * this.ordersInPool);
      const s = this.seqs.get(id) ?? { max: 0, used: new Set<number>() };
      this.seqs.set(id, s);
      let seq = s.max + 10;
      const late = s.max - 1 - Math.floor(this.random() * 8);
      if (this.random() < 0.15 && late > 0 && !s.used.has(late)) seq = late;
      s.used.add(seq);
      s.max = Math.max(s.max, seq);
      const r = this.random();
      const status = r < 0.13 ? 'cancelled' : r < 0.45 ? 'placed' : r < 0.75 ? 'paid' : 'shipped';
      triples.push([id, status, seq]);
    }
    return orders(...triples);
  }
}

/** A landing zone on s3rver written straight to the store (no faults), day by day. */
interface Landing {
  uri: string;
  /** Files in the order a plan loads them (partition, then key: landed in key order). */
  files: Array<{ key: string; rows: OrderRow[] }>;
  /** Land day `d` (0-based: 2025-04-01 + d). */
  landDay(d: number): Promise<void>;
}

function openLanding(name: string, seed: number): Landing {
  const zone = s3.landingZone(name);
  const feed = new EventFeed(seed, 24);
  const files: Landing['files'] = [];
  return {
    uri: zone.uri,
    files,
    async landDay(d) {
      const day = new Date(Date.UTC(2025, 3, 1 + d))
        .toISOString()
        .slice(0, 10)
        .replaceAll('-', '/');
      for (const [i, name] of FILES_PER_DAY.entries()) {
        const key = `${day}/${name}`;
        const rows = feed.next(4 + ((d + i) % 3));
        await land(zone.source, session, key, rows);
        files.push({ key, rows });
      }
    },
  };
}

/** Merge mode: the latest row per order, minus the orders whose latest row is a delete. */
function expectedMerged(rows: readonly OrderRow[]): OrderRow[] {
  return expectedLatest(rows).filter((r) => r.status !== 'cancelled');
}

type Setup = ReturnType<typeof makeConfig>;

/** The job on `landing` into the S3 table `tablePrefix`, with the storage reached at `endpoint`. */
function jobOn(
  landing: Landing,
  target: string,
  storage: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Setup {
  return makeConfig(
    {
      source: {
        uri: landing.uri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 },
      },
      target: { ...mergeTarget(target), deleteWhen: DELETES },
      maxFilesPerBatch: 1,
      ...extra,
    },
    storage,
  );
}

/** Storage settings for an endpoint (the proxy, s3rver itself, or a silent server). */
function storageAt(endpoint: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    endpoint,
    region: s3.region,
    forcePathStyle: true,
    singleWriter: false,
    ...timeouts(),
    ...extra,
  };
}

/** The same job, its target read straight from s3rver (no proxy, no faults). */
function direct(setup: Setup): Setup {
  return { job: setup.job, storage: { ...setup.storage, endpoint: s3.endpoint } };
}

/** An `openStorage` with the fast backoff (the retry budget and everything else as configured). */
function fastBackoff(uri: string, opts: S3EndpointOptions) {
  return openStorage(uri, { ...opts, ...FAST_BACKOFF });
}

/** A fresh S3 table URI. */
let tables = 0;
function tableUri(name: string): string {
  return `s3://${s3.bucket}/tables-${process.pid}-${++tables}/${name}/`;
}

/**
 * The state minus what differs between two correct runs: the wall-clock time of the last run, the
 * names and delete times of tombstone files (random names, stamped with the batch's clock), and the
 * ledger's files (one per batch: their entries count).
 */
function comparable(
  state: JobState,
): Omit<JobState, 'lastRunAt' | 'ledger'> & { ledgerEntries: number } {
  const { lastRunAt: _ignored, ledger, ...kept } = state;
  // Ledger files are named by a fresh uuid each, one per committed batch: the entries they hold count.
  const rest = { ...kept, ledgerEntries: (ledger?.files ?? []).reduce((n, f) => n + f.rows, 0) };
  if (!rest.tombstones) return rest;
  const files = rest.tombstones.files.map((f) => ({
    ...f,
    path: '<tombstone file>',
    minDeletedAt: '<time>',
    maxDeletedAt: '<time>',
  }));
  const dropped = rest.tombstones.dropped.map(() => ({
    path: '<tombstone file>',
    droppedAt: '<time>',
  }));
  return { ...rest, tombstones: { ...rest.tombstones, files, dropped } };
}

/** The table equals the reference: rows, version and job state (watermark included). */
function expectSameTable(table: TableView, reference: TableView): void {
  expect(duplicateRids(table.rows)).toEqual([]);
  expect(table.rows).toEqual(reference.rows);
  expect(table.snapshot?.version).toBe(reference.snapshot?.version);
  expect(comparable(table.state)).toEqual(comparable(reference.state));
}

/** A failed outcome must be a transient one: exit code 4, `retryable` in the report's error. */
function expectTransient(outcome: JobOutcome<RunReport>, label: string): void {
  if (outcome.ok) return;
  const info = errorInfo(outcome.error);
  expect(exitCodeFor(outcome.error), `${label}: ${info.message}`).toBe(EXIT_STORAGE_UNAVAILABLE);
  expect(info.retryable, label).toBe(true);
  expect(outcome.report.status).toBe('failed');
}

/** Share of the proxy's requests that were faulted, and the kinds injected. */
function faultStats(p: FaultProxy): { requests: number; faulted: number; kinds: string[] } {
  const requests = Object.values(p.byMethod).reduce((a, b) => a + b, 0);
  const faulted = Object.values(p.faults).reduce((a, b) => a + (b ?? 0), 0);
  return { requests, faulted, kinds: Object.keys(p.faults).sort() };
}

describe('the job at 12 % faults on source and target (fault injection: proxy in front of s3rver)', () => {
  const DAYS = 20;
  const SEED = 20_250_401;
  const RATE = 0.12;

  it(
    `fault injection: ${DAYS} hourly runs at 12 % faults, at least 95 % succeed and the table equals an unfaulted load`,
    async () => {
      const landing = openLanding('e2e-12', SEED);
      const setup = jobOn(landing, tableUri('orders'), storageAt(proxy.endpoint));
      const spoolRoot = await tempDir('e2e-spool', dirs);
      const ctx: Partial<RunContext> = { openStorage: fastBackoff, spoolRoot };
      // The same landing loaded without faults, into a local table, by the same runs: each day's
      // unfaulted run goes alongside the faulted one (it reads s3rver directly, not through the
      // proxy, so the proxy's counts are the faulted job's alone), overlapping its timeouts.
      const reference = jobOn(landing, await tempDir('e2e-ref', dirs), storageAt(s3.endpoint));
      proxy.reset();
      proxy.setRandom({ rate: 0, seed: SEED });
      const outcomes: Array<{ run: number; ok: boolean; reruns: number; error?: string }> = [];
      const started = Date.now();
      for (let run = 0; run <= DAYS; run++) {
        if (run < DAYS) {
          proxy.setRandom({ rate: 0 });
          await landing.landDay(run);
          proxy.setRandom({ rate: RATE });
        }
        const [first, unfaulted] = await Promise.all([
          runOutcome(setup, ctx),
          runOutcome(reference),
        ]);
        expect(unfaulted.ok, `reference run ${run}`).toBe(true);
        expectTransient(first, `run ${run}`);
        let reruns = 0;
        let last = first;
        // A failed run is rerun, as a scheduler would on exit 4 (bounded by count, not time).
        while (!last.ok && reruns < 5) {
          reruns++;
          last = await runOutcome(setup, ctx);
          expectTransient(last, `rerun ${reruns} of run ${run}`);
        }
        expect(last.ok, `run ${run} still fails after ${reruns} reruns`).toBe(true);
        outcomes.push({
          run,
          ok: first.ok,
          reruns,
          ...(first.ok ? {} : { error: errorInfo(first.error).message }),
        });
        if (run === DAYS) expect(last.report).toMatchObject({ status: 'nothing-new', commits: 0 });
      }
      proxy.setRandom({ rate: 0 });
      const stats = faultStats(proxy);
      const succeeded = outcomes.filter((o) => o.ok).length;
      console.info(
        `[12 %] ${succeeded}/${outcomes.length} runs succeeded first time in ${Date.now() - started} ms; ` +
          `${stats.faulted}/${stats.requests} requests faulted (${stats.kinds.join(', ')}); failures: ${JSON.stringify(outcomes.filter((o) => !o.ok))}`,
      );
      expect(succeeded / outcomes.length).toBeGreaterThanOrEqual(0.95);
      expect(stats.faulted / stats.requests).toBeGreaterThan(0.08);
      expect(stats.kinds).toEqual([
        'cutBody',
        'error500After',
        'error500Before',
        'resetAfter',
        'silent',
        'silentMidBody',
        'slow',
        'slowDown',
      ]);
      // Every run removed its spool folder, the failed ones too.
      expect(await fsp.readdir(spoolRoot)).toEqual([]);

      const expected = await readTarget(session, reference);
      expect(expected.rows).toEqual(expectedMerged(landing.files.flatMap((f) => f.rows)));
      expectSameTable(await readTarget(session, direct(setup)), expected);
    },
    LONG_TEST_MS,
  );
});

/** Every version of the table: its job state and its rows (read straight from s3rver). */
async function everyVersion(
  setup: Setup,
): Promise<Array<{ version: number; state: JobState; rows: OrderRow[] }>> {
  const storage = openTarget(setup.job, direct(setup).storage);
  const table = openTable(storage, session);
  const latest = (await table.snapshot())?.version ?? -1;
  const out = [];
  for (let version = 0; version <= latest; version++) {
    const snapshot = (await table.snapshot({ version }))!;
    const raw = await readTable(session, scanSource(storage), snapshot);
    const rows = raw.map((r) => ({
      order_id: Number(r['order_id']),
      status: String(r['status']),
      seq: Number(r['seq']),
      rid: String(r['rid']),
    }));
    out.push({ version, state: readJobState(snapshot, setup.job.name), rows: sortRows(rows) });
  }
  return out;
}

/**
 * Whole batches only: each version's rows are the merge of exactly the first `totals.filesLoaded`
 * files of the landing (batches load a prefix of the plan), so no version's state disagrees with
 * its data.
 */
async function expectWholeBatches(setup: Setup, landing: Landing): Promise<number> {
  const versions = await everyVersion(setup);
  for (const { version, state, rows } of versions) {
    const loaded = landing.files.slice(0, state.totals.filesLoaded).flatMap((f) => f.rows);
    expect(rows, `version ${version} (${state.totals.filesLoaded} files)`).toEqual(
      expectedMerged(loaded),
    );
    expect(state.batch, `version ${version}`).toBe(version + 1);
  }
  return versions.length;
}

describe('the job at 30 % faults (fault injection: proxy in front of s3rver)', () => {
  const SEED = 30_000;
  const RUNS = 5;
  /** Attempts per request of the odd runs: at 30 % they usually fail part-way, which is what is under test. */
  const HARSH_ATTEMPTS = 3;
  /** The run during which the store goes down after its first commit: it fails whatever the dice say. */
  const OUTAGE_RUN = 1;

  it(
    'fault injection: at 30 % faults each run succeeds or exits 4 with whole batches committed, and reruns converge',
    async () => {
      const landing = openLanding('e2e-30', SEED);
      for (let d = 0; d < 2; d++) await landing.landDay(d);
      const setup = jobOn(landing, tableUri('orders'), storageAt(proxy.endpoint), {
        maxFilesPerBatch: 2,
      });
      const harsh = { job: setup.job, storage: { ...setup.storage, maxAttempts: HARSH_ATTEMPTS } };
      const runs: Array<{ attempts: number; ok: boolean; commits: number; error?: string }> = [];
      proxy.reset();
      const started = Date.now();
      for (let i = 0; i < RUNS; i++) {
        await landing.landDay(i + 2);
        const before = (await readTarget(session, direct(setup))).state.batch;
        let down = false;
        const outage = {
          afterCommit: () => {
            if (i !== OUTAGE_RUN || down) return;
            down = true;
            proxy.setRandom({ rate: 1, kinds: ['error500Before', 'slowDown'] });
          },
        };
        proxy.setRandom({ rate: 0.3, seed: SEED + i });
        const outcome = await runOutcome(i % 2 === 1 ? harsh : setup, {
          openStorage: fastBackoff,
          hooks: outage,
        });
        proxy.setRandom({ rate: 0 });
        expectTransient(outcome, `run ${i}`);
        const after = await readTarget(session, direct(setup));
        // The report counts exactly the batches the run committed, failed or not.
        expect(outcome.report.commits, `run ${i}`).toBe(after.state.batch - before);
        const attempts = i % 2 === 1 ? HARSH_ATTEMPTS : 6;
        runs.push({
          attempts,
          ok: outcome.ok,
          commits: outcome.report.commits,
          ...(outcome.ok ? {} : { error: errorInfo(outcome.error).message }),
        });
      }
      console.info(
        `[30 %] ${Date.now() - started} ms, ${JSON.stringify(faultStats(proxy))} ${JSON.stringify(proxy.faults)}; runs: ${JSON.stringify(runs)}`,
      );
      expect(runs[OUTAGE_RUN]!.ok).toBe(false);
      // Every version the runs committed, those left by a failed run included, holds whole batches.
      expect(await expectWholeBatches(setup, landing)).toBe(
        runs.reduce((n, r) => n + r.commits, 0),
      );

      // A rerun without faults converges on the table of an unfaulted load.
      const rerun = await runOutcome(setup, { openStorage: fastBackoff });
      expect(rerun.ok).toBe(true);
      const reference = jobOn(landing, await tempDir('e2e-ref30', dirs), storageAt(s3.endpoint), {
        maxFilesPerBatch: 2,
      });
      expect((await runOutcome(reference)).ok).toBe(true);
      const expected = await readTarget(session, reference);
      expect(expected.rows).toEqual(expectedMerged(landing.files.flatMap((f) => f.rows)));
      // Batches were cut differently (failed runs left files for later ones), so versions differ;
      // the rows, the watermark with its recent files, and the totals do not.
      const final = await readTarget(session, direct(setup));
      expect(final.rows).toEqual(expected.rows);
      expect(final.state.discovery).toEqual(expected.state.discovery);
      expect(final.state.totals).toEqual(expected.state.totals);
    },
    LONG_TEST_MS,
  );
});

/** A table loaded without faults from one day, then a second day landed for the faulted run. */
async function loadedTable(name: string): Promise<{ reached: Setup; before: TableView }> {
  const landing = openLanding(name, name.length);
  await landing.landDay(0);
  const table = tableUri('orders');
  // Through the proxy (no faults yet): s3rver alone ignores put-if-absent, the proxy does not.
  const loaded = jobOn(landing, table, storageAt(proxy.endpoint));
  proxy.setRandom({ rate: 0 });
  expect((await runOutcome(loaded)).ok).toBe(true);
  await landing.landDay(1);
  return { reached: loaded, before: await readTarget(session, direct(loaded)) };
}

/** Run a job whose storage is down; the run must fail transiently (exit 4) within `boundMs`. */
async function runDown(
  setup: Setup,
  boundMs: number,
): Promise<{ error: StorageError; report: RunReport; ms: number }> {
  const started = Date.now();
  // The fast backoff: what is bounded is giving up, not the default backoff's sleep (up to 3 s).
  const outcome = await runOutcome(setup, { openStorage: fastBackoff });
  const ms = Date.now() - started;
  expect(outcome.ok).toBe(false);
  expect(ms).toBeLessThan(boundMs);
  const error = outcome.ok ? undefined : outcome.error;
  expect(error).toBeInstanceOf(StorageError);
  expect(exitCodeFor(error)).toBe(EXIT_STORAGE_UNAVAILABLE);
  expect(errorInfo(error).retryable).toBe(true);
  expect(outcome.report).toMatchObject({ status: 'failed', commits: 0 });
  return { error: error as StorageError, report: outcome.report, ms };
}

/** The table's version and job state (watermark included) are as before. */
async function expectUntouched(setup: Setup, before: TableView): Promise<void> {
  const after = await readTarget(session, setup);
  expect(after.snapshot?.version).toBe(before.snapshot?.version);
  expect(after.state).toEqual(before.state);
  expect(after.rows).toEqual(before.rows);
}

/**
 * With 6 attempts, the fast backoff and the test's idle timeout, giving up takes a second or two;
 * 30 s leaves room for a loaded machine and still fails a hang.
 */
const DOWN_BOUND_MS = 30_000;

describe('storage that is down (fault injection: proxy in front of s3rver, a silent server)', () => {
  it('fault injection: a run whose every request fails exits 4 in bounded time, names what it tried, and leaves table and watermark untouched', async () => {
    const { reached, before } = await loadedTable('e2e-down');
    const down = { job: reached.job, storage: { ...reached.storage, endpoint: proxy.endpoint } };
    proxy.reset();
    proxy.setRandom({ rate: 1, kinds: ['error500Before'], seed: 1 });
    try {
      const { error, report } = await runDown(down, DOWN_BOUND_MS);
      expect(error.message).toMatch(
        /^\[storage\] S3 storage unavailable after 6 attempts: \w+ ".*" on s3:\/\/.* \(endpoint http:\/\/127\.0\.0\.1:\d+\): HTTP 500 InternalError \(faults: HTTP 500 InternalError ×6\)/,
      );
      expect(error.context).toMatchObject({
        attempts: 6,
        status: 500,
        code: 'InternalError',
        endpoint: proxy.endpoint,
      });
      expect(error.context['op']).toEqual(expect.any(String));
      expect(error.context['key']).toEqual(expect.any(String));
      // It sent what it says it tried, and the report counts those requests.
      const sent = Object.values(report.requests ?? {}).reduce((a, b) => a + b, 0);
      expect(sent).toBeGreaterThanOrEqual(6);
      expect(sent).toBe(faultStats(proxy).requests);
    } finally {
      proxy.setRandom({ rate: 0 });
    }
    await expectUntouched(direct(reached), before);
  });

  it('fault injection: a server that accepts connections and never answers: the run exits 4 in bounded time, table untouched', async () => {
    const { reached, before } = await loadedTable('e2e-silent');
    const silent = net.createServer(() => undefined); // accepts, reads nothing, answers nothing
    const sockets = new Set<net.Socket>();
    silent.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
      const { error } = await runDown(
        { job: reached.job, storage: { ...reached.storage, endpoint } },
        DOWN_BOUND_MS,
      );
      expect(error.message).toContain('S3 storage unavailable after 6 attempts');
      expect(error.message).toContain(`(endpoint ${endpoint})`);
      expect(error.message).toContain('(faults: TimeoutError ×6)');
      expect(sockets.size).toBeGreaterThan(0);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
    await expectUntouched(direct(reached), before);
  });
});

describe('the run JSON of the CLI (fault injection: proxy in front of s3rver)', () => {
  /** The CLI in process: exit code and the one JSON report on stdout. */
  async function cliRun(file: string): Promise<{ code: number; report: RunReport }> {
    let stdout = '';
    const io: CliIO = {
      stdout: { write: (s) => void (stdout += s) },
      stderr: new PassThrough().resume(),
      context: { logger: silentLogger(), tty: false, openStorage: fastBackoff },
    };
    const code = await main(['run', '--config', file, '--json'], io);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    return { code, report: JSON.parse(lines[0]!) as RunReport };
  }

  it('fault injection: run --json counts the S3 requests, and a run with storage down exits 4 with error.retryable', async () => {
    const landing = openLanding('e2e-cli', 7);
    await landing.landDay(0);
    const job = {
      name: 'orders',
      source: {
        uri: landing.uri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 },
      },
      target: { ...mergeTarget(tableUri('orders')), deleteWhen: DELETES },
      maxFilesPerBatch: 1,
    };
    const file = path.join(await tempDir('e2e-cli', dirs), 'tidemark.yaml');
    await fsp.writeFile(
      file,
      JSON.stringify({ storage: storageAt(proxy.endpoint, { maxAttempts: 3 }), jobs: [job] }),
    );

    proxy.reset();
    const ok = await cliRun(file);
    expect(ok.code).toBe(0);
    expect(ok.report).toMatchObject({ status: 'succeeded', commits: 3, filesLoaded: 3 });
    const counts = ok.report.requests!;
    expect(Object.keys(counts).sort()).toEqual(['delete', 'get', 'head', 'list', 'put']);
    expect(counts.list).toBeGreaterThan(0);
    expect(counts.get).toBeGreaterThan(0);
    // Three data files, three commits, one tombstone file at most per batch, and the probe's two PUTs.
    expect(counts.put).toBeGreaterThanOrEqual(8);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(faultStats(proxy).requests);

    await landing.landDay(1);
    proxy.setRandom({ rate: 1, kinds: ['slowDown', 'error500Before'], seed: 3 });
    try {
      const down = await cliRun(file);
      expect(down.code).toBe(EXIT_STORAGE_UNAVAILABLE);
      expect(down.report).toMatchObject({ status: 'failed', commits: 0 });
      expect(down.report.error).toMatchObject({
        type: 'StorageError',
        retryable: true,
        context: { attempts: 3 },
      });
      expect(down.report.error!.message).toContain('S3 storage unavailable after 3 attempts');
      expect(
        Object.values(down.report.requests!).reduce((a, b) => a + b, 0),
      ).toBeGreaterThanOrEqual(3);
    } finally {
      proxy.setRandom({ rate: 0 });
    }
    // The failed run could not read the table, so its report leaves version and watermark null;
    // the table itself is as the first run left it.
    const table = await readTarget(session, makeConfig(job, storageAt(s3.endpoint)));
    expect(table.snapshot?.version).toBe(ok.report.tableVersion);
    expect(table.state.totals.filesLoaded).toBe(3);
  });
});
