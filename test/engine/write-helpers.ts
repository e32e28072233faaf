/** Helpers for the data-file writer tests: describe a relation, read written files back. */
import type { StructType } from '../../src/delta/schema.js';
import type { WrittenFile } from '../../src/engine/data-files.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';
import { deltaTypeToDuckForWrite } from '../../src/engine/type-map-write.js';

/** Columns of a relation as DESCRIBE prints them. */
export async function describeColumns(
  session: DuckSession,
  relation: string,
): Promise<{ name: string; type: string }[]> {
  const rows = await session.all(`DESCRIBE SELECT * FROM ${relation}`);
  return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
}

/**
 * SQL reading the written files back the way a Delta reader does: each file by DuckDB's own
 * read_parquet (no hive partitioning), partition columns added as typed literals from
 * `partitionValues`, columns in schema order.
 */
export function readBackSql(
  files: readonly WrittenFile[],
  schema: StructType,
  partitionColumns: readonly string[],
): string {
  return files
    .map((f) => {
      const cols = schema.fields.map((field) => {
        if (!partitionColumns.includes(field.name)) return ident(field.name);
        const v = f.partitionValues[field.name];
        const type = deltaTypeToDuckForWrite(field.type);
        return `CAST(${v === null || v === undefined ? 'NULL' : str(v)} AS ${type}) AS ${ident(field.name)}`;
      });
      return `SELECT ${cols.join(', ')} FROM read_parquet(${str(f.localPath)}, hive_partitioning = false)`;
    })
    .join(' UNION ALL ');
}

/** Rows in `a` missing from `b` plus rows in `b` missing from `a` (EXCEPT ALL both ways). */
export async function symmetricDifference(
  session: DuckSession,
  a: string,
  b: string,
): Promise<number> {
  const minus = (x: string, y: string) =>
    `SELECT count(*) FROM (SELECT * FROM (${x}) EXCEPT ALL SELECT * FROM (${y}))`;
  const row = await session.one(`SELECT (${minus(a, b)}) + (${minus(b, a)}) AS n`);
  return Number(row!['n']);
}
