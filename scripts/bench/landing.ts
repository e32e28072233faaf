/**
 * The ingest benchmark's landing zone: Parquet files of orders in `{yyyy}/{mm}/{dd}` folders,
 * a few files per day, written with DuckDB COPY. Each file brings a block of new orders plus a
 * share of rows repeating recent order ids with a later `updated_at` (status changes), so the
 * zone holds duplicate keys that the dedupe must resolve. No two rows of a key tie on
 * `updated_at`, so "latest per key" has one answer whatever the tie-breakers.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';

/** Shape of a landing zone. */
export interface LandingSpec {
  /** Folder the day folders go into. */
  root: string;
  /** First day (UTC), YYYY-MM-DD. */
  startDay: string;
  files: number;
  rowsPerFile: number;
  filesPerDay: number;
  /** Share of each file's rows that repeat a recent order id (0.02 = 2%). */
  dupShare: number;
  /** Number of the first file (to extend a zone later); default 0. */
  firstFile?: number;
}

/** One landing file. */
export interface LandingFile {
  key: string;
  rows: number;
}

/** Write the zone's files; returns their keys (relative to `root`) in order. */
export async function writeLanding(
  session: DuckSession,
  spec: LandingSpec,
): Promise<LandingFile[]> {
  const out: LandingFile[] = [];
  const first = spec.firstFile ?? 0;
  for (let f = first; f < first + spec.files; f++) {
    const key = landingKey(spec, f);
    const path = join(spec.root, ...key.split('/'));
    await mkdir(join(path, '..'), { recursive: true });
    await session.run(
      `COPY (${fileRowsSql(spec, f)}) TO ${str(path)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    out.push({ key, rows: spec.rowsPerFile });
  }
  return out;
}

/** `yyyy/mm/dd/orders-NNNNN.parquet` of file `f`. */
export function landingKey(spec: LandingSpec, f: number): string {
  const day = new Date(
    Date.parse(`${spec.startDay}T00:00:00Z`) + Math.floor(f / spec.filesPerDay) * 86_400_000,
  );
  const [y, m, d] = day.toISOString().slice(0, 10).split('-');
  return `${y}/${m}/${d}/orders-${String(f).padStart(5, '0')}.parquet`;
}

/**
 * Rows of file `f`: ids [f·n+1, (f+1)·n] are its new orders (n = new rows per file); its
 * repeats pick ids among the last three files' orders and its own. Times: the file's slot
 * (day + 6 h per file of the day), + 1 ms per new row, + 1 h + 1 ms per repeat.
 */
function fileRowsSql(spec: LandingSpec, f: number): string {
  const dups = Math.round(spec.rowsPerFile * spec.dupShare);
  const fresh = spec.rowsPerFile - dups;
  const slot = `TIMESTAMPTZ '${spec.startDay} 00:00:00+00' + INTERVAL ${Math.floor(f / spec.filesPerDay)} DAY + INTERVAL ${(f % spec.filesPerDay) * 6} HOUR`;
  const lo = Math.max(1, (f - 3) * fresh + 1);
  const hi = (f + 1) * fresh;
  const newRows =
    `SELECT (${f * fresh} + j)::BIGINT AS order_id, 'new' AS status, (${slot}) + to_milliseconds(j) AS updated_at ` +
    `FROM range(1, ${fresh + 1}) AS r(j)`;
  const repeats =
    `SELECT (${lo} + hash(${f}, j) % ${hi - lo + 1})::BIGINT AS order_id, ` +
    `(['paid', 'shipped', 'delivered', 'cancelled'])[(hash(j, ${f}) % 4 + 1)::INTEGER] AS status, ` +
    `(${slot}) + INTERVAL 1 HOUR + to_milliseconds(j) AS updated_at FROM range(1, ${dups + 1}) AS r(j)`;
  return (
    `SELECT order_id, (hash(order_id) % 500000 + 1)::BIGINT AS customer_id, status, ` +
    `((hash(order_id * 13) % 100000)::DECIMAL(12, 2) / 100)::DECIMAL(12, 2) AS amount, ` +
    `DATE '${spec.startDay}' + ((order_id - 1) // ${fresh} // ${spec.filesPerDay})::INTEGER AS order_date, updated_at ` +
    `FROM (${newRows} UNION ALL ${repeats})`
  );
}
