/**
 * Helpers for the ingestion job tests: a landing zone of order events written in CSV, Parquet
 * or NDJSON through any Storage, job configs validated by the real schema, runs with a silent
 * logger, and the target table read back the way any Delta reader reads it.
 *
 * Every landed row has a unique `rid`, so append-mode tests can check "each source row once",
 * and merge-mode tests compare with `expectedLatest` (the highest `seq` per `order_id`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from '../../src/config/load.js';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import { DuckSession, type DuckSessionOptions } from '../../src/engine/duckdb.js';
import { readTable } from '../../src/engine/scan.js';
import { literal, str } from '../../src/engine/sql.js';
import type { RunContext } from '../../src/job/context.js';
import { openTarget } from '../../src/job/open.js';
import type { JobOutcome, RunReport } from '../../src/job/report.js';
import { runJob } from '../../src/job/run-job.js';
import { readJobState, type JobState } from '../../src/job/state.js';
import { silentLogger } from '../../src/log/logger.js';
import type { Storage } from '../../src/storage/storage.js';
import { S3RVER_CREDENTIALS } from '../../scripts/lib/embedded-s3.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { TableChecker, type TableCheck } from '../helpers/table-check.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';

/** One order event as landed. */
export interface OrderRow {
  order_id: number;
  status: string;
  seq: number;
  /** Unique per landed row. */
  rid: string;
}

let ridCounter = 0;

/** Order events with fresh row ids: `[order_id, status, seq]` triples. */
export function orders(...rows: Array<[number, string, number]>): OrderRow[] {
  return rows.map(([order_id, status, seq]) => ({
    order_id,
    status,
    seq,
    rid: `r${++ridCounter}`,
  }));
}

function csvText(rows: readonly OrderRow[]): string {
  return (
    [
      'order_id,status,seq,rid',
      ...rows.map((r) => `${r.order_id},${r.status},${r.seq},${r.rid}`),
    ].join('\n') + '\n'
  );
}

function ndjsonText(rows: readonly OrderRow[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** A temp Parquet file of `rows`, written by DuckDB (BIGINT ids and seq, VARCHAR status and rid). */
async function parquetFile(session: DuckSession, rows: readonly OrderRow[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-land-'));
  const file = join(dir, 'rows.parquet');
  const values = rows
    .map(
      (r) => `(${r.order_id}::BIGINT, ${literal(r.status)}, ${r.seq}::BIGINT, ${literal(r.rid)})`,
    )
    .join(', ');
  await session.run(
    `COPY (SELECT * FROM (VALUES ${values}) AS t(order_id, status, seq, rid)) TO ${str(file)} (FORMAT parquet)`,
  );
  return file;
}

/** Write `rows` as `key` in the format its extension names (.csv, .ndjson, .parquet). */
export async function land(
  storage: Storage,
  session: DuckSession,
  key: string,
  rows: readonly OrderRow[],
): Promise<void> {
  if (key.endsWith('.csv')) return storage.write(key, csvText(rows));
  if (key.endsWith('.ndjson') || key.endsWith('.json')) return storage.write(key, ndjsonText(rows));
  if (key.endsWith('.parquet')) {
    const file = await parquetFile(session, rows);
    try {
      await storage.upload(key, file);
    } finally {
      await rm(join(file, '..'), { recursive: true, force: true });
    }
    return;
  }
  throw new Error(`land: unknown format of ${key}`);
}

/** A job config through the real schema (defaults applied), plus the storage section. */
export function makeConfig(
  job: Record<string, unknown>,
  storage: Record<string, unknown> = {},
): { job: JobConfig; storage: StorageConfig } {
  const config = validateConfig({ storage, jobs: [{ name: 'orders', ...job }] }, 'test config');
  return { job: config.jobs[0]!, storage: config.storage };
}

/** Merge-mode target settings of the order feed. */
export function mergeTarget(uri: string): Record<string, unknown> {
  return { uri, mode: 'merge', key: ['order_id'], orderBy: 'seq' };
}

/** Run the job once with a silent logger and no progress bars; its outcome (never throws). */
export function runOutcome(
  setup: { job: JobConfig; storage: StorageConfig },
  extra: Partial<RunContext> = {},
): Promise<JobOutcome<RunReport>> {
  return runJob(setup.job, {
    storage: setup.storage,
    logger: silentLogger(),
    tty: false,
    ...extra,
  });
}

/** Run the job once; its report, or the run's error thrown. */
export async function run(
  setup: { job: JobConfig; storage: StorageConfig },
  extra: Partial<RunContext> = {},
): Promise<RunReport> {
  return unwrap(await runOutcome(setup, extra));
}

/** The report of a successful outcome; a failed one throws its error. */
export function unwrap<R>(outcome: JobOutcome<R>): R {
  if (!outcome.ok) throw outcome.error;
  return outcome.report;
}

/** What a reader sees: the latest snapshot, its rows and the job state in it. */
export interface TableView {
  snapshot: Snapshot | null;
  rows: OrderRow[];
  /** `_source_file` of every row, by rid. */
  sourceFiles: Map<string, string>;
  state: JobState;
  columns: string[];
}

/** Read the job's target table back (fresh DeltaTable, no caches). */
export async function readTarget(
  session: DuckSession,
  setup: { job: JobConfig; storage: StorageConfig },
): Promise<TableView> {
  const storage = openTarget(setup.job, setup.storage);
  const snapshot = await openTable(storage, session, {
    singleWriter: setup.storage.singleWriter,
  }).snapshot();
  const state = readJobState(snapshot, setup.job.name);
  if (!snapshot) return { snapshot, rows: [], sourceFiles: new Map(), state, columns: [] };
  const raw = await readTable(session, scanSource(storage), snapshot);
  const rows = raw.map((r) => ({
    order_id: Number(r['order_id']),
    status: String(r['status']),
    seq: Number(r['seq']),
    rid: String(r['rid']),
  }));
  const sourceFiles = new Map(raw.map((r) => [String(r['rid']), String(r['_source_file'])]));
  return {
    snapshot,
    rows: sortRows(rows),
    sourceFiles,
    state,
    columns: snapshot.schema.fields.map((f) => f.name),
  };
}

/** A checker of the table invariants of the job's target (../helpers/table-check.ts). */
export function targetChecker(
  session: DuckSession,
  setup: { job: JobConfig; storage: StorageConfig },
): TableChecker {
  const storage = openTarget(setup.job, setup.storage);
  return new TableChecker(
    openTable(storage, session, { singleWriter: setup.storage.singleWriter }),
    session,
  );
}

/** The table invariants at every version of the job's target. */
export function checkTarget(
  session: DuckSession,
  setup: { job: JobConfig; storage: StorageConfig },
): Promise<TableCheck> {
  return targetChecker(session, setup).check();
}

/** Rows ordered by rid (a total order: rids are unique). */
export function sortRows(rows: readonly OrderRow[]): OrderRow[] {
  return [...rows].sort((a, b) => (a.rid < b.rid ? -1 : a.rid > b.rid ? 1 : 0));
}

/** The merge result of `rows`: per order, the row with the highest seq (tests avoid seq ties per order). */
export function expectedLatest(rows: readonly OrderRow[]): OrderRow[] {
  const best = new Map<number, OrderRow>();
  for (const r of rows) {
    const cur = best.get(r.order_id);
    if (!cur || r.seq > cur.seq) best.set(r.order_id, r);
  }
  return sortRows([...best.values()]);
}

/** rids that occur more than once. */
export function duplicateRids(rows: readonly OrderRow[]): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  for (const r of rows) {
    if (seen.has(r.rid)) dups.push(r.rid);
    seen.add(r.rid);
  }
  return dups;
}

/** A temp folder; remember to remove it (see `cleanup`). */
export async function tempDir(label: string, dirs: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `tidemark-${label}-`));
  dirs.push(dir);
  return dir;
}

/** Remove every folder in `dirs`. */
export async function cleanup(dirs: string[]): Promise<void> {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

export { DuckSession };

/**
 * The DuckDB session and temp folders of a job test file: the session opens before the file's
 * tests and is handed to `use`; after them it closes and the folders `tempDir` added to the list
 * returned are removed. `let session: DuckSession; const dirs = sessionPerFile((s) => (session = s));`
 */
export function sessionPerFile(
  use: (session: DuckSession) => void,
  opts: DuckSessionOptions = {},
): string[] {
  const dirs: string[] = [];
  let session: DuckSession | undefined;
  beforeAll(async () => {
    session = await DuckSession.open(opts);
    use(session);
  });
  afterAll(async () => {
    session?.close();
    await cleanup(dirs);
  });
  return dirs;
}

/**
 * What a job test file on s3rver needs: the server, with its credentials in the environment
 * (the job opens its own S3 client through the default chain), and a DuckDB session.
 */
export async function openS3JobEnv(
  sessionOptions: DuckSessionOptions = {},
): Promise<{ s3: S3rverHandle; session: DuckSession }> {
  process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
  const session = await DuckSession.open(sessionOptions);
  return { s3: await startS3rver(), session };
}

/** Stop what openS3JobEnv started and remove the test's temp folders. */
export async function closeS3JobEnv(
  s3: S3rverHandle | undefined,
  session: DuckSession | undefined,
  dirs: string[],
): Promise<void> {
  session?.close();
  await s3?.stop();
  await cleanup(dirs);
}

/**
 * An scd2 table's versions as a reader sees them, by key then valid_from: `id status from-to*`
 * (`*` current; `…` open), for tables of `orders` rows with the default history columns; with
 * `values`, `id status seq rid from-to*` (the row's own seq and rid too).
 */
export async function scd2History(
  session: DuckSession,
  config: ReturnType<typeof makeConfig>,
  opts: { values?: boolean } = {},
): Promise<string[]> {
  const storage = openTarget(config.job, config.storage);
  const snapshot = await openTable(storage, session, { singleWriter: false }).snapshot();
  if (!snapshot) return [];
  const rows = await readTable(session, scanSource(storage), snapshot);
  return rows
    .map((r) => ({
      id: Number(r['order_id']),
      status: opts.values
        ? `${String(r['status'])} ${Number(r['seq'])} ${String(r['rid'])}`
        : String(r['status']),
      from: Number(r['valid_from']),
      to: r['valid_to'] === null ? null : Number(r['valid_to']),
      current: r['is_current'] === true,
    }))
    .sort((a, b) => a.id - b.id || a.from - b.from)
    .map((v) => `${v.id} ${v.status} ${v.from}-${v.to ?? '…'}${v.current ? '*' : ''}`);
}

/** One event of a key in scd2 tests: a version (status `s<id>_<seq>`) or a delete at `seq`. */
export interface Scd2Event {
  id: number;
  seq: number;
  deleted: boolean;
}

/**
 * The oracle of scd2 mode: the history (as `scd2History` prints it) that every event arriving in
 * order by seq gives. Each version is a tracked change (statuses are distinct); a delete closes
 * the open version. Tests keep deletes off the seq of a version of their key (a delete wins a tie).
 */
export function scd2Oracle(events: readonly Scd2Event[]): string[] {
  const out: string[] = [];
  for (const id of [...new Set(events.map((e) => e.id))].sort((a, b) => a - b)) {
    const sorted = events.filter((e) => e.id === id).sort((a, b) => a.seq - b.seq);
    let open: { status: string; from: number } | null = null;
    for (const e of sorted) {
      if (open) out.push(`${id} ${open.status} ${open.from}-${e.seq}`);
      open = e.deleted ? null : { status: scd2Status(e), from: e.seq };
    }
    if (open) out.push(`${id} ${open.status} ${open.from}-…*`);
  }
  return out;
}

const scd2Status = (e: Scd2Event) => (e.deleted ? 'deleted' : `s${e.id}_${e.seq}`);

/** The landed row of an event (rid `id-seq`: a replayed event is the same row); deletes by `deleteWhen: status = 'deleted'`. */
export function scd2Row(e: Scd2Event): OrderRow {
  return { order_id: e.id, status: scd2Status(e), seq: e.seq, rid: `${e.id}-${e.seq}` };
}

/** A step of an scd2 snapshot source: a change file's events, or a full extract's (taken at `asOf`). */
export type Scd2Step =
  { kind: 'changes'; events: Scd2Event[] } | { kind: 'extract'; asOf: number; events: Scd2Event[] };

/**
 * The events of steps applied in turn to a snapshot source in scd2 mode, an extract's closes
 * included, for `scd2Oracle`: an extract's absent keys (whose history, before it, ends in an open
 * version, and that it lacks) become delete events at its as-of, unless an extract with a later
 * as-of was applied before it (then it closes nothing). Its rows are events like any other.
 */
export function scd2SnapshotEvents(steps: readonly Scd2Step[]): Scd2Event[] {
  const events: Scd2Event[] = [];
  let newest = -Infinity;
  for (const step of steps) {
    if (step.kind === 'extract' && step.asOf >= newest) {
      newest = step.asOf;
      const present = new Set(step.events.map((e) => e.id));
      const open = scd2Oracle(events)
        .filter((v) => v.endsWith('*'))
        .map((v) => Number(v.split(' ')[0]));
      for (const id of open)
        if (!present.has(id)) events.push({ id, seq: step.asOf, deleted: true });
    }
    events.push(...step.events);
  }
  return events;
}

/**
 * One landed row of an scd2 test with an untracked column (`trackColumns: [status]`): `status`
 * tracked (`deleted` a delete by `deleteWhen`), `rid` untracked; `file` and `line` place it in the
 * total order of rows at one seq (files land with increasing LastModified, in `file` order).
 */
export interface Scd2Landed {
  id: number;
  seq: number;
  status: string;
  rid: string;
  file: number;
  line: number;
}

/** A stored version in `scd2BatchOracle`: its interval and the row whose values it holds. */
interface Scd2Version {
  from: number;
  to: number | null;
  row: Scd2Landed;
}

/** Whether row `a` comes after row `b` at one seq (the later file, then the later line). */
const laterRow = (a: Scd2Landed, b: Scd2Landed): boolean =>
  a.file !== b.file ? a.file > b.file : a.line > b.line;

/**
 * The oracle of scd2 mode with untracked columns, batch by batch, from docs/concepts.md ("scd2"):
 * a batch rebuilds each of its keys' history as if every row it knows had arrived in order by
 * seq. It knows the batch's rows, the deletes (tombstones: every delete row loaded, and each
 * stored close no version follows) and, of the stored history, what a version row keeps: a row at
 * its valid_from and, when it absorbed later rows in place, its latest row at that row's seq ("a
 * late row inside such a version splits it at the latest row it absorbed; the times of rows
 * absorbed before that are not kept"); both hold the version's values. At one seq a delete wins,
 * then the later row. In order: a row whose tracked column (status) differs from the open
 * version's, or that follows no open version, opens a version (closing the open one at its seq);
 * one with the same status updates the open version in place (valid_from kept, the latest row's
 * values, its seq included); a delete closes the open version. Printed as `scd2History` with
 * `{ values: true }`: `id status seq rid from-to*`.
 */
export function scd2BatchOracle(batches: readonly (readonly Scd2Landed[])[]): string[] {
  const table = new Map<number, Scd2Version[]>();
  const tombstones = new Map<number, number[]>();
  for (const batch of batches) {
    for (const id of new Set(batch.map((r) => r.id))) {
      const stored = table.get(id) ?? [];
      // Per seq: a delete (null) or the row that stands there.
      const at = new Map<number, Scd2Landed | null>();
      const put = (seq: number, row: Scd2Landed | null) => {
        const held = at.get(seq);
        if (held === null) return;
        if (row === null || held === undefined || laterRow(row, held)) at.set(seq, row);
      };
      for (const v of stored) {
        put(v.from, v.row);
        if (v.row.seq > v.from && (v.to === null || v.row.seq < v.to)) put(v.row.seq, v.row);
        if (v.to !== null && !stored.some((n) => n.from === v.to)) put(v.to, null);
      }
      for (const seq of tombstones.get(id) ?? []) put(seq, null);
      for (const r of batch.filter((r) => r.id === id)) {
        const deleted = r.status === 'deleted';
        put(r.seq, deleted ? null : r);
        if (deleted) tombstones.set(id, [...(tombstones.get(id) ?? []), r.seq]);
      }
      const versions: Scd2Version[] = [];
      let open: Scd2Version | null = null;
      for (const [seq, row] of [...at.entries()].sort((a, b) => a[0] - b[0])) {
        if (open && row && row.status === open.row.status) {
          // Untracked only: in place, the latest row's values.
          if (row.seq > open.row.seq || (row.seq === open.row.seq && laterRow(row, open.row)))
            open.row = row;
          continue;
        }
        if (open) open.to = seq;
        open = row ? { from: seq, to: null, row } : null;
        if (open) versions.push(open);
      }
      table.set(id, versions);
    }
  }
  return [...table.entries()]
    .sort((a, b) => a[0] - b[0])
    .flatMap(([id, versions]) =>
      versions.map(
        (v) =>
          `${id} ${v.row.status} ${v.row.seq} ${v.row.rid} ${v.from}-${v.to ?? '…'}${v.to === null ? '*' : ''}`,
      ),
    );
}
