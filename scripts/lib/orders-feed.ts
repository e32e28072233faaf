/**
 * A small, realistic orders feed for the demo: each day new orders arrive and earlier ones
 * change status; exports are Parquet and CSV; a day's CSV repeats some rows.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import type { Storage } from '../../src/storage/storage.js';

export interface DayFile {
  /** Key below the landing prefix, e.g. `2026/11/28/orders-1.parquet`. */
  key: string;
  body: Uint8Array;
  rows: number;
}

interface Change {
  ids: [number, number];
  status: string;
  hour: number;
}

/** What happens on feed day 1..4 (5 = a late file for an earlier day). */
const PLAN: Record<number, { parquet: Change[]; csv: Change[] }> = {
  1: {
    parquet: [{ ids: [1, 20], status: 'new', hour: 9 }],
    csv: [{ ids: [1, 5], status: 'paid', hour: 15 }],
  },
  2: {
    parquet: [{ ids: [21, 35], status: 'new', hour: 9 }],
    csv: [{ ids: [1, 10], status: 'shipped', hour: 14 }],
  },
  3: {
    parquet: [{ ids: [36, 50], status: 'new', hour: 9 }],
    csv: [
      { ids: [1, 5], status: 'delivered', hour: 11 },
      { ids: [11, 20], status: 'paid', hour: 16 },
    ],
  },
  4: {
    parquet: [{ ids: [51, 60], status: 'new', hour: 8 }],
    csv: [
      { ids: [11, 15], status: 'shipped', hour: 10 },
      { ids: [42, 42], status: 'cancelled', hour: 12 },
    ],
  },
  // Arrives after day 3 was loaded, in an earlier day's folder: order 7's late update is newer
  // than what the table has and applies; order 3's is older than 'delivered' and is skipped.
  5: {
    parquet: [],
    csv: [
      { ids: [7, 7], status: 'shipped-express', hour: 22 },
      { ids: [3, 3], status: 'shipped', hour: 23 },
    ],
  },
};

function rowsSql(date: Date, changes: Change[], duplicate: boolean): string {
  const day = date.toISOString().slice(0, 10);
  const parts = changes.map(
    (c) =>
      `SELECT i AS order_id, 1000 + i % 17 AS customer_id, ${str(c.status)} AS status, ` +
      `round(10 + i * 3.75, 2)::DECIMAL(10,2) AS amount, ` +
      `(${str(day)}::DATE + INTERVAL ${c.hour} HOUR + INTERVAL (i) MINUTE)::TIMESTAMP AS updated_at ` +
      `FROM range(${c.ids[0]}, ${c.ids[1] + 1}) t(i)`,
  );
  const all = parts.join(' UNION ALL ');
  // Exports repeat rows now and then: the job keeps one row per key.
  return duplicate ? `${all} UNION ALL (SELECT * FROM (${all}) LIMIT 2)` : all;
}

async function export_(
  session: DuckSession,
  dir: string,
  sql: string,
  format: 'parquet' | 'csv',
): Promise<{ body: Uint8Array; rows: number }> {
  const path = join(dir, `out.${format}`);
  const options = format === 'parquet' ? '(FORMAT parquet)' : '(FORMAT csv, HEADER true)';
  await session.run(`COPY (${sql}) TO ${str(path)} ${options}`);
  const [count] = await session.all(`SELECT count(*)::INT AS n FROM (${sql})`);
  return { body: new Uint8Array(await readFile(path)), rows: Number(count?.['n'] ?? 0) };
}

/** The files that land for feed day `n` in the folder of `date`. */
export async function buildDay(
  session: DuckSession,
  date: Date,
  n: number,
  opts: { late?: boolean } = {},
): Promise<DayFile[]> {
  const plan = PLAN[n];
  if (!plan) throw new Error(`no feed day ${n}`);
  const folder = date.toISOString().slice(0, 10).replaceAll('-', '/');
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-feed-'));
  try {
    const files: DayFile[] = [];
    if (plan.parquet.length > 0) {
      files.push({
        key: `${folder}/orders-${n}.parquet`,
        ...(await export_(session, dir, rowsSql(date, plan.parquet, false), 'parquet')),
      });
    }
    const name = opts.late ? `late-updates-${n}.csv` : `status-changes-${n}.csv`;
    files.push({
      key: `${folder}/${name}`,
      ...(await export_(session, dir, rowsSql(date, plan.csv, !opts.late), 'csv')),
    });
    return files;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A key buildDay writes: `yyyy/mm/dd/` and `orders-N.parquet`, `status-changes-N.csv` or `late-updates-N.csv`. */
const FEED_KEY =
  /^\d{4}\/\d{2}\/\d{2}\/(orders-\d+\.parquet|status-changes-\d+\.csv|late-updates-\d+\.csv)$/;

/**
 * Empty the landing prefix of the files an earlier demo landed there (a server given with
 * --endpoint keeps them), so each demo starts from an empty feed; returns how many were deleted.
 * A file the feed does not write is not the demo's to delete: refused, naming it, deleting nothing.
 */
export async function clearEarlierFeed(storage: Storage, where: string): Promise<number> {
  const { objects } = await storage.listAll();
  const foreign = objects.filter((o) => !FEED_KEY.test(o.key)).map((o) => o.key);
  if (foreign.length > 0) {
    const named = foreign.slice(0, 3).join(', ') + (foreign.length > 3 ? ', …' : '');
    throw new Error(
      `${where} holds ${foreign.length} files the demo did not land (${named}); the demo needs that prefix to itself: empty it, or run the demo without --endpoint (its embedded server)`,
    );
  }
  if (objects.length > 0) await storage.delete(objects.map((o) => o.key));
  return objects.length;
}
