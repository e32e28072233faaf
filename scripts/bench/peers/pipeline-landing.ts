/**
 * The incremental pipeline's landing zone (peers benchmark): daily Parquet files in
 * `{yyyy}/{mm}/{dd}/` folders for an orders table of `rows` orders (ids 1..rows, as ../orders.ts
 * builds it). Each day has two files, each with new orders and updates of orders scattered over
 * the whole history; the day's second file repeats some keys of its first with a later
 * `updated_at` (duplicate keys within a day). One more file belongs to day LATE_DAY but lands two
 * days later. No two rows of a key tie on `updated_at`, and the late file's keys are its own (its
 * updates touch even ids, the daily files odd ones), so "latest per key" has one answer, whether
 * or not a MERGE compares versions with the table.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { DuckSession } from '../../../src/engine/duckdb.js';
import { str } from '../../../src/engine/sql.js';

export const PIPELINE_DAYS = 7;
/** The late file is for this day (0-based) and lands with day LATE_DAY + 2. */
const LATE_DAY = 2;
const FIRST_DAY = Date.parse('2026-06-01T00:00:00Z');

/** Sizes of one day's files. */
export interface PipelineSpec {
  /** Orders in the table before day 0. */
  rows: number;
  /** New orders per file. */
  insertsPerFile: number;
  /** Updates of stored orders per file. */
  updatesPerFile: number;
  /** Keys of a day's first file its second file repeats. */
  duplicatesPerDay: number;
}

/** A landing file: where it goes (relative to the zone) and where it was written. */
export interface PipelineFile {
  key: string;
  path: string;
  rows: number;
}

/** Write every file under `dir`; returns them by the day (0-based) they land on. */
export async function writePipelineFiles(
  session: DuckSession,
  dir: string,
  spec: PipelineSpec,
): Promise<PipelineFile[][]> {
  const days: PipelineFile[][] = [];
  for (let d = 0; d < PIPELINE_DAYS; d++) {
    const files: PipelineFile[] = [];
    for (let f = 0; f < 2; f++) files.push(await writeFile(session, dir, spec, d, f));
    if (d === LATE_DAY + 2) files.push(await writeFile(session, dir, spec, LATE_DAY, 2));
    days.push(files);
  }
  return days;
}

function dayFolder(d: number): string {
  return new Date(FIRST_DAY + d * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '/');
}

/** File `f` of day `d` (f = 2: the late file). */
async function writeFile(
  session: DuckSession,
  dir: string,
  spec: PipelineSpec,
  d: number,
  f: number,
): Promise<PipelineFile> {
  const key = `${dayFolder(d)}/orders-${d}-${f}.parquet`;
  const path = join(dir, key);
  await mkdir(dirname(path), { recursive: true });
  const at = (ms: string) =>
    `TIMESTAMPTZ '${new Date(FIRST_DAY + d * 86_400_000).toISOString()}' + INTERVAL ${f * 6} HOUR + to_milliseconds(${ms})`;
  const half = Math.floor(spec.rows / 2);
  const firstNew = spec.rows + (f === 2 ? PIPELINE_DAYS * 2 : d * 2 + f) * spec.insertsPerFile;
  // Odd ids for the daily files' updates, even ids for the late file's.
  const updated =
    f === 2 ? `(hash(${d}, ${f}, j) % ${half}) * 2 + 2` : `(hash(${d}, ${f}, j) % ${half}) * 2 + 1`;
  const parts = [
    `SELECT (${firstNew} + j)::BIGINT AS id, 'new' AS status, ${at('j')} AS updated_at FROM range(1, ${spec.insertsPerFile + 1}) r(j)`,
    `SELECT DISTINCT ON (id) ${updated} AS id, 'paid' AS status, ${at(`${spec.insertsPerFile} + j`)} AS updated_at FROM range(1, ${spec.updatesPerFile + 1}) r(j)`,
  ];
  if (f === 1) {
    // The day's duplicates: keys of file 0 (new and updated ones) again, an hour later than this file's rows.
    const first = spec.rows + d * 2 * spec.insertsPerFile;
    parts.push(
      `SELECT (${first} + 1 + hash(${d}, j) % ${spec.insertsPerFile})::BIGINT AS id, 'shipped' AS status, ${at(`3600000 + j`)} AS updated_at ` +
        `FROM range(1, ${spec.duplicatesPerDay + 1}) r(j)`,
    );
  }
  const rows =
    `SELECT id AS order_id, (hash(id) % 500000 + 1)::BIGINT AS customer_id, status, ` +
    `((hash(id * 13) % 100000)::DECIMAL(12, 2) / 100 + ${d + 1})::DECIMAL(12, 2) AS amount, ` +
    `(DATE '2021-01-01' + (least(id, ${spec.rows}) * 1826 // ${spec.rows})::INTEGER) AS order_date, updated_at ` +
    `FROM (${parts.join(' UNION ALL ')}) QUALIFY row_number() OVER (PARTITION BY id ORDER BY updated_at DESC) = 1 OR status = 'shipped'`;
  await session.run(`COPY (${rows}) TO ${str(path)} (FORMAT parquet, COMPRESSION zstd)`);
  const n = await session.one(`SELECT count(*)::BIGINT AS n FROM read_parquet(${str(path)})`);
  return { key, path, rows: Number(n?.['n']) };
}
