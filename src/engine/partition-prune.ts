/**
 * Partition pruning for a condition given by a user (`tidemark show --where`): each top-level AND
 * term that names partition columns only is evaluated by DuckDB once per distinct tuple of
 * partition values (a VALUES relation of just those columns, typed as the scan types them), and
 * only the files of the tuples every such term keeps need reading. A term that names any other
 * column does not bind against that relation and prunes nothing; with no such term at all, every
 * file is read. A file left out holds no row the condition keeps: each of its rows has the file's
 * partition values, and a row the condition keeps satisfies every AND term.
 */
import { physicalName } from '../delta/column-mapping.js';
import type { LiveFile, Snapshot } from '../delta/snapshot.js';
import type { DuckSession } from './duckdb.js';
import { conjuncts } from './expression.js';
import { partitionValueSql } from './partition-sql.js';
import { partitionValue } from './scan.js';
import { ident, identList } from './sql.js';
import { TableConfig } from '../delta/table-config.js';

/** Calls whose value changes from row to row with the same inputs (DuckDB's volatile functions). */
const VOLATILE = /\b(random|gen_random_uuid|uuid|uuidv4|uuidv7|nextval|currval|setseed)\s*\(/i;

/** The files that can hold rows matching `where` (checked: one expression), or null when no AND term names partition columns only. */
export async function filesMatchingPartitions(
  session: DuckSession,
  snapshot: Snapshot,
  where: string,
): Promise<LiveFile[] | null> {
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  const fields = snapshot.partitionColumns.map((name) =>
    snapshot.schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase()),
  );
  if (fields.length === 0 || fields.some((f) => f === undefined) || snapshot.files.length === 0)
    return null;
  const columns = fields.map((f) => ({ field: f!, key: physicalName(f!, mode) }));
  const tuples = new Map<string, { values: Array<string | null>; files: LiveFile[] }>();
  for (const file of snapshot.files) {
    const values = columns.map((c) => partitionValue(file, c.key));
    const id = JSON.stringify(values);
    const tuple = tuples.get(id);
    if (tuple) tuple.files.push(file);
    else tuples.set(id, { values, files: [file] });
  }
  const groups = [...tuples.values()];
  const rows = groups.map(
    (g, i) =>
      `(${i}, ${g.values.map((v, j) => partitionValueSql(v, columns[j]!.field.type, columns[j]!.field.name)).join(', ')})`,
  );
  const relation = `(VALUES ${rows.join(', ')}) AS ${ident('__tidemark_partitions')}(${identList(['__i', ...columns.map((c) => c.field.name)])})`;
  // Each AND term that names partition columns only narrows the tuples; the others bind to nothing here.
  const keptByTerm: Array<Set<number>> = [];
  for (const term of await conjuncts(session, where)) {
    // Evaluated once per partition, a random term would drop whole partitions: it prunes nothing.
    if (VOLATILE.test(term)) continue;
    try {
      const rowsKept = await session.all(
        `SELECT ${ident('__i')} AS i FROM ${relation} WHERE (${term})`,
      );
      keptByTerm.push(new Set(rowsKept.map((r) => Number(r['i']))));
    } catch {
      // A column that is not a partition column (a binder error): this term cannot prune. A term
      // that is wrong altogether fails the same way on the whole table, with the user's names.
    }
  }
  if (keptByTerm.length === 0) return null;
  return groups.flatMap((g, i) => (keptByTerm.every((kept) => kept.has(i)) ? g.files : []));
}
