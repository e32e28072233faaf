/**
 * Reading a row-tracking table the way PROTOCOL.md "Reader Requirements for Row Tracking" says,
 * written apart from tidemark's own scan so tests check it: per live file, every physical row
 * with its `file_row_number`, rows its deletion vector deletes left out; a row's stable id is the
 * materialized column when not NULL, else baseRowId + row index; its stable commit version the
 * materialized column when not NULL, else defaultRowCommitVersion.
 */
import type { Action, DomainMetadata } from '../../src/delta/actions.js';
import { parseCommit } from '../../src/delta/actions.js';
import { loadDeletionVector } from '../../src/delta/deletion-vectors/index.js';
import { commitKey } from '../../src/delta/log-files.js';
import { decodeLogPath } from '../../src/delta/partition-decode.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';
import type { Storage } from '../../src/storage/storage.js';

/** One live row: the value of `column`, its stable id and commit version, and where it is. */
export interface TrackedRow {
  value: unknown;
  rowId: number;
  version: number;
  file: string;
  /** The row's fresh id (baseRowId + index), whatever the materialized column says. */
  freshId: number;
}

/** Every live row of the snapshot (table on local disk) with its stable id and version, ordered by `column`. */
export async function trackedRows(
  session: DuckSession,
  storage: Storage,
  snapshot: Snapshot,
  column: string,
): Promise<TrackedRow[]> {
  const config = snapshot.metadata.configuration;
  const idColumn = config['delta.rowTracking.materializedRowIdColumnName']!;
  const versionColumn = config['delta.rowTracking.materializedRowCommitVersionColumnName']!;
  const rows: TrackedRow[] = [];
  for (const file of snapshot.files) {
    const path = storage.localPath(decodeLogPath(file.path, storage.uri))!;
    const names = new Set(
      (await session.allJson(`SELECT name FROM parquet_schema(${str(path)})`)).map((r) =>
        String(r['name']),
      ),
    );
    const stored = (name: string) =>
      names.has(name) ? `CAST(${ident(name)} AS BIGINT)` : 'CAST(NULL AS BIGINT)';
    const deleted = file.deletionVector
      ? new Set(await loadDeletionVector(storage, file.deletionVector, storage.uri))
      : new Set<number>();
    const found = await session.allJson(
      `SELECT ${ident(column)} AS value, file_row_number AS i, ${stored(idColumn)} AS id, ${stored(versionColumn)} AS v ` +
        `FROM read_parquet(${str(path)}, file_row_number = true)`,
    );
    for (const r of found) {
      const index = Number(r['i']);
      if (deleted.has(index)) continue;
      const freshId = Number(file.baseRowId) + index;
      rows.push({
        value: r['value'],
        rowId: r['id'] === null ? freshId : Number(r['id']),
        version: r['v'] === null ? Number(file.defaultRowCommitVersion) : Number(r['v']),
        file: file.path,
        freshId,
      });
    }
  }
  return rows.sort((a, b) => Number(a.value) - Number(b.value));
}

/** The row-id high-water mark of the snapshot's `delta.rowTracking` domain. */
export function highWaterMark(snapshot: Snapshot): number {
  const domain: DomainMetadata | undefined = snapshot.domains.get('delta.rowTracking');
  return domain
    ? Number(
        (JSON.parse(domain.configuration) as { rowIdHighWaterMark: number }).rowIdHighWaterMark,
      )
    : -1;
}

/** The actions of one commit file. */
export async function commitActions(storage: Storage, version: number): Promise<Action[]> {
  const bytes = await storage.read(commitKey(version));
  if (bytes === null) throw new Error(`no commit ${version}`);
  return parseCommit(Buffer.from(bytes).toString('utf8'), version, storage.uri);
}

/**
 * The writer requirements after any commit: fresh ids of live files never overlap and stay at or
 * below the high-water mark; stable ids are unique.
 */
export function checkRowIdInvariants(snapshot: Snapshot, rows: readonly TrackedRow[]): void {
  const mark = highWaterMark(snapshot);
  const ranges = snapshot.files
    .map((f) => ({
      from: Number(f.baseRowId),
      to: Number(f.baseRowId) + Number(f.parsedStats?.numRecords) - 1,
    }))
    .sort((a, b) => a.from - b.from);
  for (let i = 0; i < ranges.length; i++) {
    if (!Number.isSafeInteger(ranges[i]!.from) || ranges[i]!.to > mark)
      throw new Error(`file ids ${JSON.stringify(ranges[i])} above the mark ${mark}`);
    if (i > 0 && ranges[i]!.from <= ranges[i - 1]!.to)
      throw new Error(`overlapping fresh ids ${JSON.stringify(ranges.slice(i - 1, i + 1))}`);
  }
  const ids = rows.map((r) => r.rowId);
  if (new Set(ids).size !== ids.length)
    throw new Error(`duplicate stable row ids: ${ids.join(',')}`);
  // A stable id may equal only its own row's fresh id, never another row's.
  const freshOwner = new Map(rows.map((r) => [r.freshId, r]));
  const clash = rows.find((r) => freshOwner.has(r.rowId) && freshOwner.get(r.rowId) !== r);
  if (clash)
    throw new Error(
      `stable row id ${clash.rowId} of ${String(clash.value)} is another row's fresh id`,
    );
}
