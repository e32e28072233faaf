/**
 * A change feed shaped like AWS DMS output to S3, for the CDC tests: an `Op` column (I/U/D) first,
 * a commit-timestamp column `cdc_ts` (the job's orderBy), CDC files in date folders
 * `{yyyy}/{mm}/{dd}`, Parquet and CSV with a header, and a full-load file without `Op`.
 *
 * `generateFeed` makes a source database's history from a seed: a full load, then days of
 * inserts, updates, deletes, re-inserts of deleted keys and deletes of keys that never existed,
 * each day spread over three files at random, so one key's changes sit in several files out of
 * order. `replay` computes the database's state from the change list alone, independently of
 * tidemark, for the tests to compare with the table.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckSession } from '../../src/engine/duckdb.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import { withTableScan } from '../../src/engine/scan.js';
import { literal, str } from '../../src/engine/sql.js';
import type { Storage } from '../../src/storage/storage.js';
import { scanSource } from '../../scripts/lib/tables.js';
import { prng } from '../../scripts/lib/prng.js';

/** One row of the feed; a full-load row has no Op. */
export interface Change {
  Op?: 'I' | 'U' | 'D';
  id: number;
  name: string | null;
  balance: number | null;
  /** Commit timestamp, DMS style: `2025-03-02 10:00:00.000123`. */
  cdc_ts: string;
}

/** A row of the source table (and of the Delta table, minus lineage). */
export interface DbRow {
  id: number;
  name: string | null;
  balance: number | null;
  cdc_ts: string;
  Op: string | null;
}

/** A DMS output file: its key below the landing root and its rows (in commit order). */
export interface FeedFile {
  key: string;
  rows: Change[];
}

/** A generated history: the full-load file, then per day the CDC files. */
export interface Feed {
  fullLoad: FeedFile;
  days: FeedFile[][];
  /** Every CDC change in commit order. */
  changes: Change[];
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `2025-03-0d hh:mm:ss.uuuuuu` for second `s` of day `d` of March 2025. */
function ts(day: number, second: number): string {
  return `2025-03-${pad(day)} ${pad(Math.floor(second / 3600))}:${pad(Math.floor(second / 60) % 60)}:${pad(second % 60)}.${pad(second % 997, 6)}`;
}

/** A history of `days` days with `perDay` changes each, from `seed`. */
export function generateFeed(seed: number, days: number, perDay: number, initialRows = 30): Feed {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  // Whole cents, so the CSV text (two decimals) and the Parquet double are the same number.
  const money = () => (Math.round(rand() * 100_000) + 1) / 100;
  const live = new Set<number>();
  const deleted = new Set<number>();
  const fullRows: Change[] = [];
  for (let id = 1; id <= initialRows; id++) {
    fullRows.push({ id, name: `cust-${id}`, balance: money(), cdc_ts: ts(1, 0) });
    live.add(id);
  }
  let nextId = initialRows + 1;
  const changes: Change[] = [];
  const fileDays: FeedFile[][] = [];
  for (let d = 1; d <= days; d++) {
    const today: Change[] = [];
    for (let i = 0; i < perDay; i++) {
      const at = ts(d, 60 + i * 37);
      const r = rand();
      let c: Change;
      if (r < 0.35 && live.size > 0) {
        const id = pick([...live]);
        c = { Op: 'U', id, name: `cust-${id}-d${d}-${i}`, balance: money(), cdc_ts: at };
      } else if (r < 0.55 && live.size > 0) {
        const id = pick([...live]);
        live.delete(id);
        deleted.add(id);
        c = { Op: 'D', id, name: `cust-${id}`, balance: money(), cdc_ts: at };
      } else if (r < 0.65 && deleted.size > 0) {
        const id = pick([...deleted]);
        deleted.delete(id);
        live.add(id);
        c = { Op: 'I', id, name: `cust-${id}-again`, balance: money(), cdc_ts: at };
      } else if (r < 0.7) {
        // A delete for a key the table never held (the source table predates the feed).
        c = { Op: 'D', id: 10_000 + d * 100 + i, name: null, balance: null, cdc_ts: at };
      } else {
        const id = nextId++;
        live.add(id);
        c = { Op: 'I', id, name: `cust-${id}`, balance: money(), cdc_ts: at };
      }
      today.push(c);
    }
    changes.push(...today);
    const files: Change[][] = [[], [], []];
    for (const c of today) files[Math.floor(rand() * 3)]!.push(c);
    const date = `2025/03/${pad(d)}`;
    const stamp = `202503${pad(d)}`;
    fileDays.push(
      files
        .map((rows, i) => ({
          key: `${date}/${stamp}-0000000${i + 1}.${i === 1 ? 'csv' : 'parquet'}`,
          rows,
        }))
        .filter((f) => f.rows.length > 0),
    );
  }
  return {
    fullLoad: { key: '2025/03/01/LOAD00000001.parquet', rows: fullRows },
    days: fileDays,
    changes,
  };
}

/** The source database after the full load and `changes`, applied in commit order. */
export function replay(fullLoad: readonly Change[], changes: readonly Change[]): DbRow[] {
  const db = new Map<number, DbRow>();
  for (const c of fullLoad)
    db.set(c.id, { id: c.id, name: c.name, balance: c.balance, cdc_ts: c.cdc_ts, Op: null });
  const ordered = [...changes].sort((a, b) =>
    a.cdc_ts < b.cdc_ts ? -1 : a.cdc_ts > b.cdc_ts ? 1 : 0,
  );
  for (const c of ordered) {
    if (c.Op === 'D') db.delete(c.id);
    else
      db.set(c.id, {
        id: c.id,
        name: c.name,
        balance: c.balance,
        cdc_ts: c.cdc_ts,
        Op: c.Op ?? null,
      });
  }
  return [...db.values()].sort((a, b) => a.id - b.id);
}

function csvText(rows: readonly Change[]): string {
  const cell = (v: string | number | null | undefined) =>
    v === null || v === undefined ? '' : String(v);
  const lines = rows.map((r) =>
    [r.Op, r.id, r.name, r.balance === null ? null : r.balance.toFixed(2), r.cdc_ts]
      .map(cell)
      .join(','),
  );
  return ['Op,id,name,balance,cdc_ts', ...lines].join('\n') + '\n';
}

/** Parquet of `rows` written by DuckDB; without an Op column when no row has one (full load). */
async function parquetFile(
  session: DuckSession,
  rows: readonly Change[],
  dir: string,
): Promise<string> {
  const withOp = rows.some((r) => r.Op !== undefined);
  const values = rows
    .map((r) => {
      const cols = [
        `${r.id}::BIGINT`,
        r.name === null ? 'NULL::VARCHAR' : literal(r.name),
        r.balance === null ? 'NULL::DOUBLE' : `${r.balance}::DOUBLE`,
        `${str(r.cdc_ts)}::TIMESTAMP`,
      ];
      return `(${withOp ? `${literal(r.Op ?? null)}::VARCHAR, ` : ''}${cols.join(', ')})`;
    })
    .join(', ');
  const names = `${withOp ? 'Op, ' : ''}id, name, balance, cdc_ts`;
  const file = join(dir, 'rows.parquet');
  await session.run(
    `COPY (SELECT * FROM (VALUES ${values}) AS t(${names})) TO ${str(file)} (FORMAT parquet)`,
  );
  return file;
}

/** Land a feed file through `storage` in the format its extension names. */
export async function landFile(
  storage: Storage,
  session: DuckSession,
  file: FeedFile,
): Promise<void> {
  if (file.key.endsWith('.csv')) return storage.write(file.key, csvText(file.rows));
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-cdc-'));
  try {
    await storage.upload(file.key, await parquetFile(session, file.rows, dir));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The table's rows in the source database's terms (lineage columns left out), by id. */
export async function tableRows(
  session: DuckSession,
  storage: Storage,
  snapshot: Snapshot | null,
): Promise<DbRow[]> {
  if (!snapshot) return [];
  const rows = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.allJson(
      `SELECT id, name, balance, strftime(cdc_ts, '%Y-%m-%d %H:%M:%S.%f') AS cdc_ts, Op FROM (${relation}) ORDER BY id`,
    ),
  );
  return rows.map((r) => ({
    id: Number(r['id']),
    name: r['name'] === null ? null : String(r['name']),
    balance: r['balance'] === null ? null : Number(r['balance']),
    cdc_ts: String(r['cdc_ts']),
    Op: r['Op'] === null ? null : String(r['Op']),
  }));
}
