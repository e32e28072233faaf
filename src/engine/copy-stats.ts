/**
 * A written file's statistics from the COPY that wrote it (DuckDB's `RETURN_STATS`: per file its
 * row count and, per leaf column, the Parquet writer's min, max and null count), put in the form
 * of a row of the stats query (./file-stats.ts `statsAggregatesSql`), so `statsFromRow` makes the
 * same `add.stats` from either, byte for byte. It saves reading a just-written file back.
 *
 * Where the writer's statistics are not what the query computes there is no row (null), and the
 * caller reads the file back:
 *   - a string min or max of 256 UTF-8 bytes or more: the writer cuts it, or leaves it out;
 *   - an ENUM column (the load's lineage column): the writer gives it no min or max;
 *   - a float or double column holding NaN: the writer's min/max skip NaN, the query's max is NaN;
 *   - an array or a map: the writer counts null elements, the query counts null rows;
 *   - a date or timestamp the writer prints otherwise than strftime does (BC, years past 9999);
 *   - a leaf without an entry, or without a min or max where it holds values.
 */
import type { DataType } from '../delta/schema.js';
import type { Row } from './duckdb.js';
import { STRING_STAT_CODE_POINTS, type StatsLeaf } from './file-stats.js';

/** The COPY option that makes DuckDB return the statistics of each file it wrote. */
export const RETURN_STATS = 'RETURN_STATS';

/** The writer cuts string statistics at this many UTF-8 bytes: shorter ones are exact. */
const WRITER_STRING_STAT_BYTES = 256;

/** One file's line of a `COPY … (RETURN_STATS)` result, as `DuckSession.allJson` gives it. */
interface CopyResultRow {
  count: string;
  column_statistics: Array<{ key: string; value: Array<{ key: string; value: string }> }> | null;
}

/** Rows the COPY wrote, from its result line (0 without one). */
export function copiedRows(result: Row | undefined): number {
  return Number(result?.['count'] ?? 0);
}

/** The stats query's row for the file, or null where the writer's figures would differ (see above). */
export function statsRowFromCopy(result: Row, leaves: readonly StatsLeaf[]): Row | null {
  const { count, column_statistics } = result as unknown as CopyResultRow;
  const rows = Number(count);
  const byLeaf = new Map(
    (column_statistics ?? []).map((c) => [c.key, new Map(c.value.map((v) => [v.key, v.value]))]),
  );
  const row: Row = { n: rows };
  for (const leaf of leaves) {
    // Struct fields are leaves of their own; an array or a map is one leaf counted by rows.
    if (typeof leaf.type !== 'string') return null;
    const stats = byLeaf.get(leafKey(leaf.path));
    const nulls = stats?.get('null_count');
    if (stats === undefined || nulls === undefined) return null;
    row[`${leaf.alias}_nulls`] = Number(nulls);
    if (!leaf.minMax) continue;
    if (Number(nulls) === rows) {
      row[`${leaf.alias}_min`] = null;
      row[`${leaf.alias}_max`] = null;
      continue;
    }
    if ((leaf.type === 'float' || leaf.type === 'double') && stats.get('has_nan') !== 'false')
      return null;
    const min = queryText(stats.get('min'), leaf.type);
    const max = queryText(stats.get('max'), leaf.type);
    if (min === null || max === null) return null;
    row[`${leaf.alias}_min`] = min;
    row[`${leaf.alias}_max`] = max;
  }
  return row;
}

/** How the result names a leaf column: each name double-quoted, joined by dots. */
function leafKey(path: readonly string[]): string {
  return path.map((p) => `"${p.replaceAll('"', '""')}"`).join('.');
}

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(\+00)?$/;

/** The writer's text as the stats query gives it (./file-stats.ts `statText`), or null. */
function queryText(text: string | undefined, type: DataType): string | null {
  if (text === undefined) return null;
  switch (type) {
    case 'string':
      if (Buffer.byteLength(text) >= WRITER_STRING_STAT_BYTES) return null;
      return Array.from(text).slice(0, STRING_STAT_CODE_POINTS).join('');
    case 'date':
      return DATE.test(text) ? text : null;
    case 'timestamp':
    case 'timestamp_ntz': {
      // strftime's %g: the milliseconds, floored; the writer prints up to 6 digits, trailing zeros cut.
      const m = TIMESTAMP.exec(text);
      const utc = type === 'timestamp';
      if (!m || (m[4] !== undefined) !== utc) return null;
      const ms = (m[3] ?? '').padEnd(3, '0').slice(0, 3);
      return `${m[1]}T${m[2]}.${ms}${utc ? 'Z' : ''}`;
    }
    case 'byte':
    case 'short':
    case 'integer':
    case 'long':
      return INTEGER.test(text) ? text : null;
    case 'float':
    case 'double':
      return text;
    default:
      return typeof type === 'string' && type.startsWith('decimal(') && DECIMAL.test(text)
        ? text
        : null;
  }
}
