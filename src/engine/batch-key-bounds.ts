/**
 * The key bounds a MERGE of a batch reads (../delta/key-bounds.ts): per key column of a type whose
 * statistics order like its values, the batch's [min, max], in the form the conflict check
 * compares with `add.stats`. Partition columns are left out (the read set's partitions cover
 * them), as are key columns of other types: bounds on fewer columns still enclose every key.
 */
import { physicalName } from '../delta/column-mapping.js';
import { BOUNDABLE_TYPES, type KeyBound } from '../delta/key-bounds.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DuckSession } from './duckdb.js';
import { ident } from './sql.js';
import { deltaTypeToDuck } from './type-map-read.js';
import { TableConfig } from '../delta/table-config.js';

/** Key bounds of `batchTable` for a MERGE into `snapshot`'s table; [] when no key column can be bounded. */
export async function batchKeyBounds(
  session: DuckSession,
  batchTable: string,
  snapshot: Snapshot,
  keys: readonly string[],
): Promise<KeyBound[]> {
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  const columns = keys.flatMap((key) => {
    const field = snapshot.schema.fields.find((f) => f.name.toLowerCase() === key.toLowerCase());
    if (!field || typeof field.type !== 'string' || !BOUNDABLE_TYPES.has(field.type)) return [];
    if (snapshot.partitionColumns.some((p) => p.toLowerCase() === key.toLowerCase())) return [];
    return [{ key, type: field.type, path: [physicalName(field, mode)] }];
  });
  if (columns.length === 0) return [];
  // In the table's type, so the order is the column's (the batch is read in it already).
  const selects = columns.flatMap((c, i) =>
    boundSql(`CAST(${ident(c.key)} AS ${deltaTypeToDuck(c.type)})`, c.type, i),
  );
  const row = await session.one(`SELECT ${selects.join(', ')} FROM ${ident(batchTable)}`);
  const bounds: KeyBound[] = [];
  columns.forEach((c, i) => {
    const min = row?.[`min${i}`];
    const max = row?.[`max${i}`];
    // An empty batch (or only NULL keys, which loading refuses) reads nothing: no bound needed.
    if (min === null || min === undefined || max === null || max === undefined) return;
    const timestamp = c.type === 'timestamp' || c.type === 'timestamp_ntz';
    bounds.push({
      path: c.path,
      type: c.type,
      min: timestamp ? Number(min) : String(min),
      max: timestamp ? Number(max) : String(max),
    });
  });
  return bounds;
}

/** min/max of one column as text: integers, strings and dates as they are, timestamps as whole ms widened outwards. */
function boundSql(column: string, type: string, i: number): string[] {
  if (type === 'timestamp' || type === 'timestamp_ntz') {
    return [
      `CAST(floor(epoch_us(min(${column})) / 1000) AS BIGINT)::VARCHAR AS min${i}`,
      `CAST(ceil(epoch_us(max(${column})) / 1000) AS BIGINT)::VARCHAR AS max${i}`,
    ];
  }
  return [`min(${column})::VARCHAR AS min${i}`, `max(${column})::VARCHAR AS max${i}`];
}
