/**
 * What a Parquet timestamp means, by its isAdjustedToUTC flag (DuckDB reads `true` as
 * TIMESTAMP WITH TIME ZONE, `false` as a naive TIMESTAMP):
 * - a naive one is a wall clock, as Spark (3.4+) reads it: a column the batch creates (a new
 *   table's, or a new column) is `timestamp_ntz`, stored exactly; an existing `timestamp` column
 *   takes it as UTC (the table's type is the established declaration);
 * - a UTC-adjusted one is an instant: into a `timestamp_ntz` column it would need a zone to
 *   become a wall clock, so it is refused naming file and column unless `source.columns`
 *   declares the column `timestamp_ntz` (then its UTC wall-clock time is stored).
 * CSV and JSON texts are not concerned: a text without an offset is UTC; into a `timestamp_ntz`
 * column a text with an offset is refused (./text-cast.ts, ./json-wall-clocks.ts), see
 * docs/concepts.md, Types.
 * Only top-level columns: a timestamp inside a struct, list or map keeps the UTC reading.
 * An INT96 timestamp (Spark's, Hive's and Impala's legacy encoding, which has no such flag) is an
 * instant, as Spark reads it, although DuckDB reads it as a naive TIMESTAMP.
 */
import type { StructField, StructType } from '../delta/schema.js';
import { SchemaError } from '../errors.js';
import type { LoadFile } from './file-select.js';
import type { FileColumn } from './load-conform.js';

const NAIVE = new Set(['TIMESTAMP', 'TIMESTAMP_NS', 'TIMESTAMP_MS', 'TIMESTAMP_S']);
/** How DuckDB types a UTC-adjusted Parquet timestamp. */
export const ZONED = 'TIMESTAMP WITH TIME ZONE';

/**
 * Top-level columns that a Parquet file of the batch holds as naive timestamps and that neither
 * the table (`schema`) nor the job (`declared`) types: the batch creates them as `timestamp_ntz`.
 */
export function naiveParquetTimestamps(
  described: ReadonlyMap<LoadFile, readonly FileColumn[]>,
  schema: StructType | undefined,
  declared: readonly StructField[] = [],
): string[] {
  const typed = new Set([...(schema?.fields ?? []), ...declared].map((f) => f.name.toLowerCase()));
  const found = new Map<string, string>();
  for (const [file, columns] of described) {
    if (file.format !== 'parquet') continue;
    for (const c of columns) {
      const lower = c.name.toLowerCase();
      if (NAIVE.has(c.type) && !c.int96 && !typed.has(lower) && !found.has(lower))
        found.set(lower, c.name);
    }
  }
  return [...found.values()];
}

/**
 * A Parquet file's UTC-adjusted timestamp column into a `timestamp_ntz` column, undeclared: the
 * table's, or one the batch creates because another of its Parquet files holds the column as a
 * wall clock (read as one, the instant would silently become its UTC wall-clock time). A
 * SchemaError naming both.
 */
export function refuseInstantsIntoWallClock(
  described: ReadonlyMap<LoadFile, readonly FileColumn[]>,
  schema: StructType | undefined,
  declared: readonly StructField[] = [],
): void {
  const wallClock = new Map(
    (schema?.fields ?? [])
      .filter((f) => f.type === 'timestamp_ntz')
      .map((f) => [f.name.toLowerCase(), f.name]),
  );
  const created = new Map(
    naiveParquetTimestamps(described, schema, declared).map((c) => [c.toLowerCase(), c]),
  );
  if (wallClock.size === 0 && created.size === 0) return;
  const allowed = new Set(
    declared.filter((f) => f.type === 'timestamp_ntz').map((f) => f.name.toLowerCase()),
  );
  for (const [file, columns] of described) {
    if (file.format !== 'parquet') continue;
    for (const c of columns) {
      const lower = c.name.toLowerCase();
      const column = wallClock.get(lower) ?? created.get(lower);
      const instant = c.type === ZONED || c.int96 === true;
      if (!instant || column === undefined || allowed.has(lower)) continue;
      const what = wallClock.has(lower)
        ? `the table's column ${JSON.stringify(column)} is timestamp_ntz (a wall clock, no zone)`
        : `another Parquet file of the batch holds ${JSON.stringify(column)} as a wall clock (no zone), which makes the new column timestamp_ntz`;
      throw new SchemaError(
        `[load] ${file.key}: column ${JSON.stringify(c.name)} is ${c.int96 ? 'an INT96 Parquet timestamp (an instant, as Spark reads it)' : 'a UTC-adjusted Parquet timestamp (an instant)'}, and ${what}; ` +
          `declare ${column}: timestamp_ntz in source.columns to store its UTC wall-clock time${wallClock.has(lower) ? '' : ', or timestamp to take the wall clocks as UTC instants'}`,
        { context: { key: file.key, column } },
      );
    }
  }
}
