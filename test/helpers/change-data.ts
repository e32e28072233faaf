/**
 * Reading one commit's change data feed the way a change-feed reader does (PROTOCOL.md "Reader
 * Requirements for AddCDCFile"): the commit's `cdc` actions, each file found through `cdc.path`
 * (never through the folder), read by DuckDB, its partition values taken from the action.
 */
import { parseCommit, type Action, type AddCDCFile } from '../../src/delta/actions.js';
import { commitKey } from '../../src/delta/log-files.js';
import { decodeLogPath } from '../../src/delta/partition-decode.js';
import type { DuckSession, Row } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';
import type { Storage } from '../../src/storage/storage.js';

/** The actions of commit `version`. */
export async function commitActions(storage: Storage, version: number): Promise<Action[]> {
  const bytes = await storage.read(commitKey(version));
  if (!bytes) throw new Error(`no commit ${version} in ${storage.uri}`);
  return parseCommit(Buffer.from(bytes).toString('utf8'), version, storage.uri);
}

/** The commit's `cdc` actions. */
export function cdcActions(actions: readonly Action[]): AddCDCFile[] {
  return actions.flatMap((a) => ('cdc' in a ? [a.cdc] : []));
}

/**
 * The rows of commit `version`'s change files (JSON-safe values), partition columns as the
 * action's strings, ordered by `orderBy` (SQL over the columns). Local tables only.
 */
export async function changeRows(
  session: DuckSession,
  storage: Storage,
  version: number,
  orderBy: string,
): Promise<Row[]> {
  const files = cdcActions(await commitActions(storage, version));
  if (files.length === 0) return [];
  const parts = files.map((f) => {
    const path = storage.localPath(decodeLogPath(f.path, storage.uri));
    if (path === null) throw new Error('changeRows reads local tables only');
    const partitions = Object.entries(f.partitionValues).map(
      ([k, v]) => `${v === null ? 'NULL' : str(v)}::VARCHAR AS ${ident(k)}`,
    );
    return `SELECT *${partitions.length > 0 ? `, ${partitions.join(', ')}` : ''} FROM read_parquet(${str(path)}, hive_partitioning = false)`;
  });
  return session.allJson(
    `SELECT * FROM (${parts.join(' UNION ALL BY NAME ')}) ORDER BY ${orderBy}`,
  );
}
