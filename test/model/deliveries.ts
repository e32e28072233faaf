/**
 * The model-based test of deliveries (issue 26, item 4): replace mode, and snapshot sources in
 * merge mode (docs/concepts.md, *Target modes*). A sequence lands files (full extracts, empty ones,
 * several per run, late older ones; with `snapshotPattern`, change files beside the extracts) and
 * runs the job (plainly, crashing at a commit point then run again, or `--allow-large-delete`),
 * discovering by partition or by modification time. The job is driven in-process through the
 * function the CLI calls, on local folders, real DuckDB, real Parquet files and real Delta logs.
 *
 * The oracle knows nothing of tidemark's code. What a run finds follows the documented discovery:
 * by partition, the files of partitions from `lookback` before the watermark on (all on the first
 * run); by modification time, files newer than the watermark less `settle`; never a file it has
 * handled. Of the extracts found, the newest delivery (a partition; a file, by LastModified then
 * key, within its partition when found by partition) loads if it is newer than the newest one applied; every other extract found is superseded
 * (the watermark passes it, nothing loads). Then:
 * - replace: the table is the delivery applied (its latest row per key with a key, every row
 *   without), never an older one;
 * - snapshot: merge semantics (per key the newest event by orderBy, NULL oldest, then LastModified,
 *   file, position; unless it is a delete), where the extract adds, for every key the table holds
 *   and the extract lacks, a delete that ties with the stored row and wins the tie. An extract that
 *   would delete more than `maxDeleteShare` of the table's keys is refused, nothing committed,
 *   unless the run allows large deletes; the change files found are merged after the extract.
 * A crash before any commit, then a rerun, ends where one run does.
 */
import { mkdir, mkdtemp, rename, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { expect } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { readTable } from '../../src/engine/scan.js';
import { literal, str } from '../../src/engine/sql.js';
import { SnapshotDeleteRefusedError } from '../../src/errors.js';
import type { RunContext, RunHooks } from '../../src/job/context.js';
import { openTarget } from '../../src/job/open.js';
import type { JobOutcome } from '../../src/job/report.js';
import { runJob } from '../../src/job/run-job.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';

/** Partitions 2025-03-01 … 2025-03-06. */
export const DAYS = 6;
const KEYS = 5;
/** `discover.settle` by modification time, and how far back a late file's LastModified lies (in steps of it). */
const SETTLE_MS = 60_000;
const LATE_STEP_MS = 25_000;

/** One landed row: key, version (null: NULL), value, operation (D: a delete, snapshot mode's deleteWhen). */
export interface Row {
  id: number;
  ver: number | null;
  val: string;
  op: 'I' | 'D';
}

export interface DeliveryTable {
  mode: 'replace' | 'snapshot';
  discover: 'partition' | 'modified';
  /** Replace mode: `key` and `orderBy` set (a snapshot source always has them). */
  keyed: boolean;
  /** Snapshot mode: `snapshotPattern: full-*.parquet` (files not matching it are changes). */
  pattern: boolean;
  /** By partition: 1, or every partition (late files always found). */
  lookback: number;
  /** Snapshot mode: `source.maxDeleteShare` (undefined: the default, 0.5). */
  maxDeleteShare: number | undefined;
  deletionVectors: boolean;
  maxFilesPerBatch: number;
}

export type Step =
  /**
   * A file lands in partition `day` (discovering by modification time, in folder `day`), with a
   * LastModified one second after the last landing, or (`late` > 0, by modification time) `late`
   * x 25 s before it. `extract`: with snapshotPattern, a full extract (else a change file).
   */
  | { kind: 'land'; day: number; rows: Row[]; extract: boolean; late: number }
  | { kind: 'run' }
  /** `tidemark run --allow-large-delete` (replace mode: a plain run). */
  | { kind: 'allow' }
  | {
      kind: 'crash';
      at: 'afterFetch' | 'afterWrite' | 'beforeCommit' | 'afterCommit';
      batch: number;
    };

export interface Sequence {
  table: DeliveryTable;
  steps: Step[];
}

// ---- generation --------------------------------------------------------------------------------

function rowOf(mode: DeliveryTable['mode']): fc.Arbitrary<Row> {
  return fc.record({
    id: fc.integer({ min: 1, max: KEYS }),
    // Few versions, so equal versions (ties) are common; NULL now and then.
    ver: fc.option(fc.integer({ min: 1, max: 5 }), { freq: 8 }),
    val: fc.constantFrom('a', 'b', 'c'),
    op:
      mode === 'snapshot'
        ? fc.constantFrom<'I' | 'D'>(...('IIIIIIID'.split('') as Array<'I' | 'D'>))
        : fc.constant<'I'>('I'),
  });
}

function stepOf(mode: DeliveryTable['mode']): fc.Arbitrary<Step> {
  // An extract: most keys, one row each, in shuffled order (some absent: deletes, a few beyond the
  // bound), a key twice now and then; an empty one now and then.
  const row = rowOf(mode);
  const ids = Array.from({ length: KEYS }, (_, i) => i + 1);
  const rows = fc.oneof(
    {
      weight: 5,
      arbitrary: fc
        .tuple(
          fc.shuffledSubarray(ids, { minLength: 2 }),
          fc.array(row, { maxLength: 2 }),
          fc.infiniteStream(row),
        )
        .map(([keys, extra, each]) => [
          ...keys.map((id) => ({ ...each.next().value, id })),
          ...extra,
        ]),
    },
    { weight: 2, arbitrary: fc.array(row, { maxLength: 3 }) },
  );
  // Read only discovering by modification time (by partition, a late file is one of an older day).
  const late = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 4 }));
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('land' as const),
        day: fc.integer({ min: 1, max: DAYS }),
        rows,
        // Read only with snapshotPattern (without one every file is an extract).
        extract: fc.boolean(),
        late,
      }),
    },
    { weight: 3, arbitrary: fc.constant({ kind: 'run' as const }) },
    {
      weight: mode === 'snapshot' ? 2 : 0,
      arbitrary: fc.constant({ kind: 'allow' as const }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('crash' as const),
        at: fc.constantFrom(
          'afterFetch' as const,
          'afterWrite' as const,
          'beforeCommit' as const,
          'afterCommit' as const,
        ),
        batch: fc.nat({ max: 2 }),
      }),
    },
  );
}

/** A table setting of `mode` and 2 … `maxSteps` steps, ending with a run. */
export function sequences(mode: DeliveryTable['mode'], maxSteps: number): fc.Arbitrary<Sequence> {
  const table: fc.Arbitrary<DeliveryTable> = fc.record({
    mode: fc.constant(mode),
    discover: fc.constantFrom('partition' as const, 'modified' as const),
    keyed: mode === 'snapshot' ? fc.constant(true) : fc.boolean(),
    pattern: mode === 'snapshot' ? fc.boolean() : fc.constant(false),
    lookback: fc.constantFrom(1, DAYS),
    maxDeleteShare:
      mode === 'snapshot' ? fc.constantFrom(undefined, 0.25, 0.75) : fc.constant(undefined),
    deletionVectors: fc.boolean(),
    maxFilesPerBatch: fc.constantFrom(1, 1000),
  });
  // Steps independent of the table setting, so that both shrink.
  return fc.record({
    table,
    steps: fc
      .array(stepOf(mode), { minLength: 1, maxLength: maxSteps - 1 })
      .map((s): Step[] => [...s, { kind: 'run' }]),
  });
}

// ---- the oracle --------------------------------------------------------------------------------

interface LandedFile {
  key: string;
  day: number;
  modified: number;
  rows: Row[];
  extract: boolean;
}

/** A row as loaded, with what orders it; `absent`: a snapshot's delete of a key its extract lacks. */
interface Event extends Row {
  modified: number;
  key: string;
  pos: number;
  absent: boolean;
}

/**
 * Which delivery a file is: its partition, or (by modification time, or with a pattern) the file;
 * with a pattern by partition, the file within its partition (an extract landing late in an older
 * partition is older).
 */
type Mark = { day: number } | { modified: number; key: string; day?: number };

function compareMarks(a: Mark, b: Mark): number {
  if (a.day !== undefined && b.day !== undefined && a.day !== b.day) return a.day - b.day;
  if ('modified' in a && 'modified' in b)
    return a.modified - b.modified || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  if (!('modified' in a) && !('modified' in b)) return 0;
  throw new Error('marks of two kinds');
}

/**
 * The documented order of a key's rows (docs/concepts.md, *Ties*), newer positive: orderBy (NULL
 * oldest), LastModified, file key, position; a snapshot's delete just after the row it deletes.
 */
function compareEvents(a: Event, b: Event): number {
  if (a.ver !== b.ver) return a.ver === null ? -1 : b.ver === null ? 1 : a.ver - b.ver;
  if (a.modified !== b.modified) return a.modified - b.modified;
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  if (a.pos !== b.pos) return a.pos - b.pos;
  return Number(a.absent) - Number(b.absent);
}

export type TableRow = Pick<Row, 'id' | 'ver' | 'val'>;

/** What a run should do: succeed, or refuse the extract naming these counts. */
export type Prediction = { ok: true } | { ok: false; absent: number; tableKeys: number };

export class Oracle {
  readonly files = new Map<string, LandedFile>();
  /** Files a run found (loaded or superseded): never found again. */
  private readonly handled = new Set<string>();
  /** Partition (day) or LastModified, as the job's state holds it; null before the first commit. */
  private watermark: number | null = null;
  private applied: Mark | null = null;
  /** Snapshot mode: every row loaded, and the deletes of absent keys. */
  private readonly events: Event[] = [];
  /** Replace mode: the table. */
  private replaced: TableRow[] = [];
  private tableExists = false;

  constructor(private readonly table: DeliveryTable) {}

  private mark(f: LandedFile): Mark {
    if (this.table.discover === 'modified') return { modified: f.modified, key: f.key };
    return this.table.pattern ? { day: f.day, modified: f.modified, key: f.key } : { day: f.day };
  }

  private found(f: LandedFile): boolean {
    if (this.handled.has(f.key)) return false;
    if (this.watermark === null) return true;
    return this.table.discover === 'partition'
      ? f.day >= this.watermark - this.table.lookback
      : f.modified > this.watermark - SETTLE_MS;
  }

  private eventsOf(f: LandedFile): Event[] {
    return f.rows.map((r, pos) => ({ ...r, modified: f.modified, key: f.key, pos, absent: false }));
  }

  /** Per key the newest of `events`, deletes included. */
  private static newest(events: readonly Event[]): Map<number, Event> {
    const newest = new Map<number, Event>();
    for (const e of events) {
      const cur = newest.get(e.id);
      if (!cur || compareEvents(e, cur) > 0) newest.set(e.id, e);
    }
    return newest;
  }

  /** A run (`allow`: --allow-large-delete): what it should do, and (when it succeeds) its effect. */
  run(allow: boolean): Prediction {
    const found = [...this.files.values()].filter((f) => this.found(f));
    const extracts = found.filter((f) => f.extract);
    const changes = found.filter((f) => !f.extract);
    let newest: Mark | null = null;
    for (const f of extracts) {
      const m = this.mark(f);
      if (newest === null || compareMarks(m, newest) > 0) newest = m;
    }
    const applies =
      newest !== null && (this.applied === null || compareMarks(newest, this.applied) > 0);
    const delivery = applies
      ? extracts.filter((f) => compareMarks(this.mark(f), newest!) === 0)
      : [];
    if (this.table.mode === 'snapshot' && applies) {
      const stored = [...Oracle.newest(this.events).values()].filter((e) => e.op !== 'D');
      const inExtract = new Set(delivery.flatMap((f) => f.rows.map((r) => r.id)));
      const absent = stored.filter((e) => !inExtract.has(e.id));
      const share = stored.length === 0 ? 0 : absent.length / stored.length;
      if (share > (this.table.maxDeleteShare ?? 0.5) && !allow)
        return { ok: false, absent: absent.length, tableKeys: stored.length };
      for (const e of absent) this.events.push({ ...e, op: 'D', absent: true });
    }
    if (applies) {
      if (this.table.mode === 'replace') {
        const rows = delivery.flatMap((f) => this.eventsOf(f));
        this.replaced = this.table.keyed ? [...Oracle.newest(rows).values()] : rows;
      } else for (const f of delivery) this.events.push(...this.eventsOf(f));
      this.applied = newest;
    }
    for (const f of changes) this.events.push(...this.eventsOf(f));
    // Any file loaded (one of no rows too: Parquet declares its types) creates the table.
    if (applies || changes.length > 0) this.tableExists = true;
    // The watermark passes every file found (a superseded delivery too), once there is a table to commit it in.
    if (this.tableExists) {
      for (const f of found) {
        this.handled.add(f.key);
        const at = this.table.discover === 'partition' ? f.day : f.modified;
        if (this.watermark === null || at > this.watermark) this.watermark = at;
      }
    }
    return { ok: true };
  }

  /** The table the promise says, in one order. */
  expected(): TableRow[] {
    const rows =
      this.table.mode === 'replace'
        ? this.replaced
        : [...Oracle.newest(this.events).values()].filter((e) => e.op !== 'D');
    return sortRows(rows.map(({ id, ver, val }) => ({ id, ver, val })));
  }
}

export function sortRows(rows: TableRow[]): TableRow[] {
  const text = (r: TableRow) => JSON.stringify([r.id, r.ver ?? -1, r.val]);
  return rows.sort((a, b) => a.id - b.id || (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
}

// ---- the driver --------------------------------------------------------------------------------

const dayPrefix = (d: number) => `2025/03/${String(d).padStart(2, '0')}/`;

/** Applies steps to a real landing zone and table, and the same steps to the oracle. */
export class World {
  readonly oracle: Oracle;
  private readonly source: LocalStorage;
  private readonly setup: { job: JobConfig; storage: StorageConfig };
  private clock = Date.UTC(2025, 2, 10);
  private fileNo = 0;

  constructor(
    private readonly session: DuckSession,
    private readonly root: string,
    private readonly table: DeliveryTable,
  ) {
    this.oracle = new Oracle(table);
    this.source = new LocalStorage(path.join(root, 'landing'));
    const config = validateConfig(this.config(), 'delivery model config');
    this.setup = { job: config.jobs[0]!, storage: config.storage };
  }

  private config(): Record<string, unknown> {
    const t = this.table;
    const discover =
      t.discover === 'partition'
        ? { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: t.lookback }
        : { by: 'modified', settle: `${SETTLE_MS / 1000}s` };
    const snapshot =
      t.mode === 'snapshot'
        ? {
            snapshot: true,
            ...(t.pattern ? { snapshotPattern: 'full-*.parquet' } : {}),
            ...(t.maxDeleteShare !== undefined ? { maxDeleteShare: t.maxDeleteShare } : {}),
          }
        : {};
    const target =
      t.mode === 'snapshot'
        ? { mode: 'merge', key: ['id'], orderBy: 'ver', deleteWhen: "op = 'D'" }
        : { mode: 'replace', ...(t.keyed ? { key: ['id'], orderBy: 'ver' } : {}) };
    return {
      jobs: [
        {
          name: 'deliveries',
          source: { uri: this.source.uri, discover, ...snapshot },
          target: {
            uri: path.join(this.root, 'table'),
            ...target,
            deletionVectors: t.deletionVectors,
          },
          maxFilesPerBatch: t.maxFilesPerBatch,
          concurrency: 2,
        },
      ],
    };
  }

  private ctx(extra: Partial<RunContext> = {}): RunContext {
    return {
      storage: this.setup.storage,
      logger: silentLogger(),
      tty: false,
      spoolRoot: this.root,
      ...extra,
    };
  }

  private async land(s: Extract<Step, { kind: 'land' }>): Promise<void> {
    const extract = !this.table.pattern || s.extract;
    const name = `${this.table.pattern ? (extract ? 'full' : 'change') : 'part'}-${++this.fileNo}.parquet`;
    const key = `${dayPrefix(s.day)}${name}`;
    let modified: number;
    if (s.late > 0 && this.table.discover === 'modified')
      modified = this.clock - s.late * LATE_STEP_MS;
    else modified = this.clock += 1000;
    const tmp = path.join(this.root, `tmp-${this.fileNo}.parquet`);
    const values = s.rows.map((r) => {
      const ver = r.ver === null ? 'NULL::BIGINT' : `${r.ver}::BIGINT`;
      return `(${r.id}::BIGINT, ${ver}, ${literal(r.val)}, ${literal(r.op)})`;
    });
    const select =
      s.rows.length === 0
        ? "SELECT 1::BIGINT AS id, 1::BIGINT AS ver, '' AS val, '' AS op WHERE false"
        : `SELECT * FROM (VALUES ${values.join(', ')}) AS t(id, ver, val, op)`;
    await this.session.run(`COPY (${select}) TO ${str(tmp)} (FORMAT parquet)`);
    const file = path.join(this.root, 'landing', key);
    await mkdir(path.dirname(file), { recursive: true });
    await rename(tmp, file);
    await utimes(file, modified / 1000, modified / 1000);
    this.oracle.files.set(key, { key, day: s.day, modified, rows: s.rows, extract });
  }

  /** Apply one step to the world and the oracle; throws when a run's outcome is not the predicted one. */
  async apply(s: Step): Promise<void> {
    switch (s.kind) {
      case 'land':
        return this.land(s);
      case 'run':
      case 'allow': {
        const allow = s.kind === 'allow' && this.table.mode === 'snapshot';
        const ran = await runJob(this.setup.job, this.ctx(allow ? { allowLargeDelete: true } : {}));
        return expectOutcome(ran, this.oracle.run(allow), s.kind);
      }
      case 'crash': {
        const hooks: RunHooks = {
          [s.at]: (batch: number) => {
            if (batch === s.batch) throw new Error('injected crash');
          },
        };
        // The crashed run leaves the table at its last commit; the run after it ends where one run does.
        await runJob(this.setup.job, this.ctx({ hooks }));
        const after = await runJob(this.setup.job, this.ctx());
        return expectOutcome(after, this.oracle.run(false), 'run after a crash');
      }
    }
  }

  /** The table's rows, as a reader sees them (fresh table, no caches). */
  async actual(): Promise<TableRow[]> {
    const storage = openTarget(this.setup.job, this.setup.storage);
    const snapshot = await openTable(storage, this.session).snapshot();
    if (!snapshot) return [];
    const raw = await readTable(this.session, scanSource(storage), snapshot);
    return sortRows(
      raw.map((r) => ({
        id: Number(r['id']),
        ver: r['ver'] === null ? null : Number(r['ver']),
        val: String(r['val']),
      })),
    );
  }

  async open(): Promise<this> {
    await mkdir(path.join(this.root, 'landing'), { recursive: true });
    return this;
  }

  async dispose(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}

/** The run did what the oracle predicted: succeeded, or refused the extract naming its counts. */
function expectOutcome(outcome: JobOutcome<unknown>, predicted: Prediction, what: string): void {
  if (predicted.ok) {
    if (!outcome.ok)
      throw new Error(`${what} failed: ${(outcome.error as Error).message}`, {
        cause: outcome.error,
      });
    return;
  }
  const refusal = `refused: would delete ${predicted.absent} of ${predicted.tableKeys} keys`;
  if (outcome.ok) throw new Error(`${what} succeeded; the oracle says ${refusal}`);
  const err = outcome.error;
  if (!(err instanceof SnapshotDeleteRefusedError))
    throw new Error(`${what} failed (${(err as Error).message}); the oracle says ${refusal}`);
  const { absentKeys, tableKeys } = err.context as { absentKeys: number; tableKeys: number };
  if (absentKeys !== predicted.absent || tableKeys !== predicted.tableKeys)
    throw new Error(
      `${what} refused deleting ${absentKeys} of ${tableKeys} keys; the oracle says ${refusal}`,
    );
}

/** A step as one short line (the shrunk sequence printed on failure). */
export function describeStep(s: Step, table: DeliveryTable): string {
  switch (s.kind) {
    case 'land': {
      const rows = s.rows.map((r) => `${r.op}${r.id}@${r.ver ?? 'NULL'}=${r.val}`).join(' ');
      const when =
        s.late > 0 && table.discover === 'modified' ? ` (LastModified ${s.late * 25} s back)` : '';
      return `land ${!table.pattern || s.extract ? 'extract' : 'change file'} day ${s.day}${when}: ${rows || '(no rows)'}`;
    }
    case 'allow':
      return 'run --allow-large-delete';
    case 'crash':
      return `run crashing ${s.at} batch ${s.batch}, then run`;
    default:
      return s.kind;
  }
}

// ---- the check ---------------------------------------------------------------------------------

/** Sequences per file in `npm test` (a few seconds each), TIDEMARK_MODEL_RUNS for more; the soak (TIDEMARK_SOAK=1) runs 500. */
export const DELIVERY_RUNS = Number(
  process.env['TIDEMARK_MODEL_RUNS'] ?? (process.env['TIDEMARK_SOAK'] === '1' ? 500 : 12),
);
/** TIDEMARK_MODEL_SEED replays one seed (printed by a failure). */
export const DELIVERY_SEED = Number(process.env['TIDEMARK_MODEL_SEED'] ?? 26_2026);

/** Apply `seq`, comparing the table with the oracle after each run; throws naming the step. */
export async function checkDeliveries(session: DuckSession, seq: Sequence): Promise<void> {
  const world = await new World(
    session,
    await mkdtemp(path.join(tmpdir(), 'tidemark-deliveries-')),
    seq.table,
  ).open();
  try {
    for (const [i, s] of seq.steps.entries()) {
      try {
        await world.apply(s);
      } catch (err) {
        throw new Error(
          `at step ${i + 1} (${describeStep(s, seq.table)}): ${(err as Error).message}`,
          {
            cause: err,
          },
        );
      }
      if (s.kind === 'land') continue;
      const actual = await world.actual();
      const expected = world.oracle.expected();
      if (JSON.stringify(actual) !== JSON.stringify(expected))
        throw new Error(
          `after step ${i + 1} (${describeStep(s, seq.table)}): table ${JSON.stringify(actual)}, the oracle ${JSON.stringify(expected)}`,
        );
    }
  } finally {
    await world.dispose();
  }
}

/**
 * Run `runs` sequences of `mode`; on failure, the seed and the shrunk sequence. Shrinking a
 * sequence of real runs is slow on a loaded machine, so it stops at 85 % of `timeoutMs` (the
 * test's timeout) with the smallest sequence found by then; sequences that do not all finish by
 * then fail the test too (an interruption is no pass).
 */
export async function checkDeliveryModel(
  session: DuckSession,
  opts: {
    mode: DeliveryTable['mode'];
    runs: number;
    seed: number;
    timeoutMs: number;
    maxSteps?: number;
  },
): Promise<void> {
  const result = await fc.check(
    fc.asyncProperty(sequences(opts.mode, opts.maxSteps ?? 12), (seq) =>
      checkDeliveries(session, seq),
    ),
    {
      seed: opts.seed,
      numRuns: opts.runs,
      endOnFailure: false,
      interruptAfterTimeLimit: Math.round(opts.timeoutMs * 0.85),
      markInterruptAsFailure: true,
    },
  );
  if (!result.failed) return;
  const seq = result.counterexample?.[0] as Sequence | undefined;
  if (!seq)
    expect.fail(
      `delivery model interrupted after ${result.numRuns} of ${opts.runs} sequences (seed ${result.seed}): they did not finish within 85 % of ${opts.timeoutMs} ms`,
    );
  const lines = [
    `delivery model failed: seed ${result.seed} (replay: TIDEMARK_MODEL_SEED=${result.seed}), after ${result.numRuns} sequences, shrunk ${result.numShrinks} times${result.interrupted ? ' (shrinking cut short by the time limit)' : ''}`,
    `table: ${JSON.stringify(seq.table)}`,
    ...seq.steps.map((s, i) => `  ${i + 1}. ${describeStep(s, seq.table)}`),
    `error: ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`,
  ];
  expect.fail(lines.join('\n'));
}
