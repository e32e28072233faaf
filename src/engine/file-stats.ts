/**
 * Per-file statistics for `add.stats` (docs/delta-protocol.md, Statistics), computed in SQL as aggregates over the
 * rows of each file and shaped like Spark's: `numRecords`, then `minValues`/`maxValues`/`nullCount`
 * nested like the schema.
 *
 * Rules followed (Spark's StatisticsCollection):
 * - Only the first `numIndexedCols` leaf columns (default 32, -1 = all; the table's
 *   `delta.dataSkippingNumIndexedCols`) get stats; arrays and maps count as one leaf. A clustered
 *   table's clustering columns always get them (the protocol requires it). Partition columns are
 *   not in the files and get none.
 * - min/max only for numeric, date, timestamp, timestamp_ntz and string columns; nullCount for
 *   every leaf (for an array or map: rows where the column itself is null).
 * - Strings: min is cut to 32 UTF-16 units; a cut max gets U+007F or U+10FFFF appended so it stays
 *   ≥ every value, or is left out when no such bound exists within 64 units.
 * - Timestamps: milliseconds, floored (`2020-02-01T08:09:10.000Z`). A floored max can be up to
 *   999 µs below the real max; Spark and the kernel add that margin back when skipping.
 * - Float/double min/max are left out when they are NaN or infinite (not representable in JSON).
 * - Decimals and longs beyond 2^53 are kept as exact JSON number text (JsonNumber).
 */
import type { DataType } from '../delta/schema.js';
import { clusteringColumns } from '../delta/clustering.js';
import type { FileStats, Snapshot } from '../delta/snapshot.js';
import { TableConfig } from '../delta/table-config.js';
import { JsonNumber } from '../delta/stats.js';
import type { Row } from './duckdb.js';
import { str } from './sql.js';

/** Spark's default `delta.dataSkippingNumIndexedCols`. */
export const DEFAULT_NUM_INDEXED_COLS = 32;
/** Spark's `spark.databricks.io.skipping.stringPrefixLength`. */
export const STRING_PREFIX_LENGTH = 32;
/**
 * Code points of a string min/max the stats query fetches: each is at least one UTF-16 unit,
 * so enough for truncateMaxString (2 × the prefix, and a character more).
 */
export const STRING_STAT_CODE_POINTS = 2 * STRING_PREFIX_LENGTH + 4;

/** A top-level data column: its name, Delta type and SQL over the rows being summarized. */
export interface StatsColumn {
  name: string;
  type: DataType;
  sql: string;
}

/** One leaf column that gets stats; `alias` names its aggregates in the stats query. */
export interface StatsLeaf {
  path: string[];
  type: DataType;
  sql: string;
  minMax: boolean;
  alias: string;
}

const MIN_MAX_TYPES = new Set([
  'byte',
  'short',
  'integer',
  'long',
  'float',
  'double',
  'date',
  'timestamp',
  'timestamp_ntz',
  'string',
]);

/** The stats policy of a table (none yet: the defaults): its `delta.dataSkippingNumIndexedCols` and its clustering columns. */
export function statsPolicyOf(snapshot: Snapshot | null): StatsPolicy {
  if (!snapshot) return {};
  const numIndexedCols = TableConfig.of(snapshot.protocol, snapshot.metadata).numIndexedColumns;
  const clustering = clusteringColumns(snapshot);
  return {
    ...(numIndexedCols === undefined ? {} : { numIndexedCols }),
    ...(clustering.length > 0 ? { alwaysIndexed: clustering } : {}),
  };
}

/** Which columns of a table's data files get statistics. */
export interface StatsPolicy {
  /** Leaf columns, in schema order, that get stats (-1 = all); default 32. */
  numIndexedCols?: number;
  /** Top-level columns (as the files name them) that get stats wherever they stand. */
  alwaysIndexed?: readonly string[];
}

/**
 * The leaves that get stats, in schema order: at most `numIndexedCols` of them (-1 = all), plus
 * every leaf of the `alwaysIndexed` columns.
 */
export function statsLeaves(
  columns: readonly StatsColumn[],
  policy: StatsPolicy = {},
): StatsLeaf[] {
  const leaves: StatsLeaf[] = [];
  const numIndexedCols = policy.numIndexedCols ?? DEFAULT_NUM_INDEXED_COLS;
  const limit = numIndexedCols < 0 ? Infinity : numIndexedCols;
  const always = new Set(policy.alwaysIndexed ?? []);
  // Forced leaves count towards the limit too, as a clustering column among the first N does in Spark.
  let counted = 0;
  const visit = (path: string[], type: DataType, sql: string, forced: boolean): void => {
    if (!forced && counted >= limit) return;
    if (typeof type !== 'string' && type.type === 'struct') {
      for (const f of type.fields)
        visit([...path, f.name], f.type, `struct_extract(${sql}, ${str(f.name)})`, forced);
      return;
    }
    const minMax =
      typeof type === 'string' && (MIN_MAX_TYPES.has(type) || type.startsWith('decimal('));
    leaves.push({ path, type, sql, minMax, alias: `s${leaves.length}` });
    counted += 1;
  };
  for (const c of columns) visit([c.name], c.type, c.sql, always.has(c.name));
  return leaves;
}

/** The aggregate select list: `count(*) AS n` plus min/max/null-count per leaf, all as text or counts. */
export function statsAggregatesSql(leaves: readonly StatsLeaf[]): string {
  const parts = ['count(*) AS n'];
  for (const leaf of leaves) {
    if (leaf.minMax) {
      parts.push(
        `${statText('min', leaf)} AS ${leaf.alias}_min`,
        `${statText('max', leaf)} AS ${leaf.alias}_max`,
      );
    }
    parts.push(`count(*) - count(${leaf.sql}) AS ${leaf.alias}_nulls`);
  }
  return parts.join(', ');
}

/** min/max as text in the form the stats JSON wants (strings fetched long enough to truncate). */
function statText(agg: 'min' | 'max', leaf: StatsLeaf): string {
  const v = `${agg}(${leaf.sql})`;
  switch (leaf.type) {
    case 'date':
      return `strftime(${v}, '%Y-%m-%d')`;
    case 'timestamp':
      return `strftime(timezone('UTC', ${v}), '%Y-%m-%dT%H:%M:%S.%gZ')`;
    case 'timestamp_ntz':
      return `strftime(${v}, '%Y-%m-%dT%H:%M:%S.%g')`;
    case 'string':
      // left() counts code points (STRING_STAT_CODE_POINTS). The cast makes an ENUM column (see
      // castToDeltaSql) compare as text, not by its index.
      return `left(${agg}(CAST(${leaf.sql} AS VARCHAR)), ${STRING_STAT_CODE_POINTS})`;
    default:
      return `CAST(${v} AS VARCHAR)`;
  }
}

/** FileStats from one row of the stats query. */
export function statsFromRow(row: Row, leaves: readonly StatsLeaf[]): FileStats {
  const minValues: Record<string, unknown> = {};
  const maxValues: Record<string, unknown> = {};
  const nullCount: Record<string, unknown> = {};
  for (const leaf of leaves) {
    setPath(nullCount, leaf.path, Number(row[`${leaf.alias}_nulls`]));
    if (!leaf.minMax) continue;
    const min = statValue(row[`${leaf.alias}_min`], leaf.type, 'min');
    const max = statValue(row[`${leaf.alias}_max`], leaf.type, 'max');
    if (min !== undefined) setPath(minValues, leaf.path, min);
    if (max !== undefined) setPath(maxValues, leaf.path, max);
  }
  return { numRecords: Number(row['n']), minValues, maxValues, nullCount };
}

function statValue(text: unknown, type: DataType, which: 'min' | 'max'): unknown {
  if (typeof text !== 'string') return undefined; // all rows null
  switch (type) {
    case 'string':
      return which === 'min' ? truncateMinString(text) : truncateMaxString(text);
    case 'date':
    case 'timestamp':
    case 'timestamp_ntz':
      return text;
    case 'byte':
    case 'short':
    case 'integer':
      return Number(text);
    case 'long':
      return Number.isSafeInteger(Number(text)) ? Number(text) : new JsonNumber(text);
    case 'float':
    case 'double': {
      const n = Number(text);
      return Number.isFinite(n) ? n : undefined;
    }
    default:
      return new JsonNumber(text); // decimal(p,s): full-scale text, e.g. 1.50
  }
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let obj = target;
  for (const key of path.slice(0, -1)) {
    obj[key] ??= {};
    obj = obj[key] as Record<string, unknown>;
  }
  obj[path[path.length - 1]!] = value;
}

/** A lower bound for a string: its first `prefix` UTF-16 units, not splitting a surrogate pair. */
export function truncateMinString(s: string, prefix = STRING_PREFIX_LENGTH): string {
  if (s.length <= prefix) return s;
  return isSurrogatePairAt(s, prefix - 1) ? s.slice(0, prefix + 1) : s.slice(0, prefix);
}

const ASCII_MAX = '\u007F';
const UNICODE_MAX = '\u{10FFFF}';

/**
 * An upper bound for a string in UTF-8 byte order (Spark's truncateMaxStringAgg): a prefix plus a
 * tie-break character greater than the character it replaces, extending the prefix past U+10FFFF
 * characters up to 2×prefix units; undefined when no bound that short exists.
 */
export function truncateMaxString(s: string, prefix = STRING_PREFIX_LENGTH): string | undefined {
  if (s.length <= prefix) return s;
  let len = truncateMinString(s, prefix).length;
  while (len <= 2 * prefix) {
    if (len >= s.length) return s;
    if (s.startsWith(UNICODE_MAX, len)) {
      len += 2;
    } else if (s[len]! < ASCII_MAX) {
      return s.slice(0, len) + ASCII_MAX;
    } else {
      return s.slice(0, len) + UNICODE_MAX;
    }
  }
  return undefined;
}

function isSurrogatePairAt(s: string, i: number): boolean {
  const hi = s.charCodeAt(i);
  const lo = s.charCodeAt(i + 1);
  return hi >= 0xd800 && hi <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff;
}
