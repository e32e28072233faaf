/**
 * Reads checkpoint Parquet (Spark's or tidemark's, any age; V1 or V2 spec, and V2 sidecars) into
 * actions (docs/delta-protocol.md, Checkpoints). A V2 checkpoint's `sidecar` and `checkpointMetadata`
 * rows come back as actions too: the Delta layer reads the sidecars they name.
 * All parts are read together with union_by_name, so old checkpoints that lack newer columns
 * work; each action struct comes back through to_json, which turns MAP columns into JSON
 * objects and BIGINTs into JSON numbers. Unknown columns (a stray `commitInfo`) are ignored.
 */
import type { Action } from '../delta/actions.js';
import type { DuckSession } from './duckdb.js';
import { safeReadPath } from './safe-alias.js';
import { ident, str } from './sql.js';

/** The action columns a checkpoint (or sidecar) may hold. */
const ACTION_COLUMNS = [
  'txn',
  'add',
  'remove',
  'metaData',
  'protocol',
  'domainMetadata',
  'checkpointMetadata',
  'sidecar',
] as const;

/** Typed struct forms Spark may add next to the JSON text; tidemark uses the text. */
const DERIVED_ADD_FIELDS = ['stats_parsed', 'partitionValues_parsed'];

/** The actions held in the checkpoint files at `localPaths` (all parts of one checkpoint). */
export async function readCheckpointActions(
  session: DuckSession,
  localPaths: string[],
): Promise<Action[]> {
  if (localPaths.length === 0) return [];
  const source = `read_parquet([${localPaths.map((p) => str(safeReadPath(p))).join(', ')}], union_by_name = true, hive_partitioning = false)`;
  const present = new Set(
    (await session.all(`DESCRIBE SELECT * FROM ${source}`)).map((r) => String(r['column_name'])),
  );
  const columns = ACTION_COLUMNS.filter((c) => present.has(c));
  if (columns.length === 0) return [];
  const select = columns.map((c) => `to_json(${ident(c)}) AS ${ident(c)}`).join(', ');
  const where = columns.map((c) => `${ident(c)} IS NOT NULL`).join(' OR ');
  const rows = await session.all(`SELECT ${select} FROM ${source} WHERE ${where}`);
  const actions: Action[] = [];
  for (const row of rows) {
    for (const column of columns) {
      const json = row[column];
      if (typeof json === 'string')
        actions.push(toAction(column, JSON.parse(json) as Record<string, unknown>));
    }
  }
  return actions;
}

function toAction(column: (typeof ACTION_COLUMNS)[number], value: Record<string, unknown>): Action {
  if (column === 'add') for (const field of DERIVED_ADD_FIELDS) delete value[field];
  return { [column]: value } as unknown as Action;
}
