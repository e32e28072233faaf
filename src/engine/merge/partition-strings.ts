/**
 * A Delta table cannot hold an empty string as a partition value: the protocol serializes NULL
 * as an empty (or absent) partition value, and Spark, delta-rs and Polars read `''` back as NULL
 * (tests in interop/ read it so). tidemark never changes a value silently, so a row to store with
 * `''` in a string partition column fails its batch, naming the file, row and column, before
 * anything is written. It is bad data like a value that does not cast (a BadFileError whose
 * `context.key` is the file, so `onBadFile: quarantine` sets the file aside).
 */
import type { StructType } from '../../delta/schema.js';
import { BadFileError } from '../../errors.js';
import type { DuckSession } from '../duckdb.js';
import { ident, str } from '../sql.js';
import { BATCH_SOURCE_FILE, BATCH_SOURCE_ROW } from './temp-names.js';
import { describeLineage, formatValue, type Lineage } from './validate.js';

const COLUMN = '__tm_empty_partition_column';

/** Fail on the first row of `rows.sql` with `''` in a string partition column. */
export async function refuseEmptyPartitionStrings(
  session: DuckSession,
  rows: {
    sql: string;
    schema: StructType;
    partitionColumns: readonly string[];
    keys: readonly string[];
    lineage: Lineage;
    uri: string;
  },
): Promise<void> {
  const columns = rows.schema.fields
    .filter((f) => f.type === 'string' && rows.partitionColumns.includes(f.name))
    .map((f) => f.name);
  if (columns.length === 0) return;
  const lineage = [
    ...(rows.lineage.file ? [BATCH_SOURCE_FILE] : []),
    ...(rows.lineage.row ? [BATCH_SOURCE_ROW] : []),
  ].map(ident);
  const which = `CASE ${columns.map((c) => `WHEN ${ident(c)} = '' THEN ${str(c)}`).join(' ')} END AS ${ident(COLUMN)}`;
  const order = [...lineage, ...rows.keys.map(ident)];
  const bad = await session.one(
    `SELECT ${[...rows.keys.map(ident), ...lineage, which].join(', ')} FROM (${rows.sql}) AS ${ident('r')} ` +
      `WHERE ${columns.map((c) => `${ident(c)} = ''`).join(' OR ')}${order.length > 0 ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT 1`,
  );
  if (!bad) return;
  const column = String(bad[COLUMN]);
  const where = describeLineage(bad, rows.lineage);
  const keyText = rows.keys.map((k) => `${k}=${formatValue(bad[k])}`).join(', ');
  const row = keyText === '' ? 'a row' : `the row with key (${keyText})`;
  throw new BadFileError(
    `[merge] ${row}${where.text} has an empty string in partition column ${JSON.stringify(column)} of table ${rows.uri}: ` +
      `Delta stores an empty partition value as NULL, so the table cannot keep it; give the row a value (or NULL) in the source, or partition by another column`,
    {
      kind: 'terminal',
      context: {
        uri: rows.uri,
        column,
        ...where.context,
        ...(keyText === '' ? {} : { keyValue: keyText }),
      },
    },
  );
}
