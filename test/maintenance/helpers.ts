/**
 * Helpers for the maintenance tests: the same table on local disk and on s3rver, appends that
 * make small files, rows read back through the reader, and a way to back-date files.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Action, CommitInfo } from '../../src/delta/actions.js';
import { parseCommit } from '../../src/delta/actions.js';
import { commitKey } from '../../src/delta/log-files.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import type { DeltaTable, DeltaTableOptions } from '../../src/delta/table.js';
import type { DuckSession, Row } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { appendAndCommit, openTable, scanSource } from '../../scripts/lib/tables.js';

/** A table location on one backend. */
export interface Place {
  storage: Storage;
  /** The table folder, on local disk only. */
  dir?: string;
  /** Set a file's LastModified (key relative to the table root). */
  age(key: string, at: Date): Promise<void>;
  /** Open the table here (s3rver needs singleWriter: it ignores If-None-Match). */
  open(session: DuckSession, opts?: Omit<DeltaTableOptions, 'checkpointIO'>): DeltaTable;
  cleanup(): Promise<void>;
}

/** A backend the tests loop over. */
export interface Backend {
  name: string;
  place(): Promise<Place>;
}

/** Tables in fresh temp folders on local disk. */
export const localBackend: Backend = {
  name: 'local',
  async place() {
    const dir = await mkdtemp(join(tmpdir(), 'tidemark-maint-'));
    return {
      storage: new LocalStorage(dir),
      dir,
      age: (key, at) => utimes(join(dir, key), at, at),
      open: (session, opts = {}) => openTable(new LocalStorage(dir), session, opts),
      cleanup: () => rm(dir, { recursive: true, force: true }),
    };
  },
};

/** Tables under fresh prefixes on s3rver (started by the caller). */
export function s3Backend(s3: () => S3rverHandle): Backend {
  return {
    name: 's3rver',
    async place() {
      const prefix = `t-${randomUUID()}/`;
      return {
        storage: s3().makeStorage(prefix),
        age: (key, at) => s3().setLastModified(prefix + key, at),
        open: (session, opts = {}) =>
          openTable(s3().makeStorage(prefix), session, { singleWriter: true, ...opts }),
        cleanup: async () => {},
      };
    },
  };
}

/** Append the rows of `sql` (one file per partition); creates the table partitioned by `partitionBy`. */
export async function append(
  session: DuckSession,
  table: DeltaTable,
  sql: string,
  partitionBy: string[] = [],
): Promise<number> {
  await session.run(`CREATE OR REPLACE TABLE maint_batch AS ${sql}`);
  const result = await appendAndCommit(table, session, { batch: 'maint_batch', partitionBy });
  return result.version!;
}

/** The latest snapshot (throws when the table does not exist). */
export async function latest(table: DeltaTable): Promise<Snapshot> {
  const snapshot = await table.snapshot();
  if (!snapshot) throw new Error(`no table at ${table.uri}`);
  return snapshot;
}

/** Every row of the table as JSON-safe values, sorted by all columns. */
export async function rowsOf(session: DuckSession, table: DeltaTable): Promise<Row[]> {
  const snapshot = await latest(table);
  return withTableScan(session, scanSource(table.storage), snapshot, (relation) =>
    session.allJson(`SELECT * FROM (${relation}) ORDER BY ALL`),
  );
}

/** The actions of one commit file. */
export async function commitActions(storage: Storage, version: number): Promise<Action[]> {
  const bytes = await storage.read(commitKey(version));
  if (!bytes) throw new Error(`no commit ${version}`);
  return parseCommit(new TextDecoder().decode(bytes), version, storage.uri);
}

/** The commitInfo of one commit. */
export async function commitInfoOf(storage: Storage, version: number): Promise<CommitInfo> {
  const info = (await commitActions(storage, version)).find((a) => 'commitInfo' in a);
  if (!info || !('commitInfo' in info)) throw new Error(`commit ${version} has no commitInfo`);
  return info.commitInfo;
}

/** Keys of all objects under `prefix`, sorted. */
export async function keysUnder(storage: Storage, prefix = ''): Promise<string[]> {
  return (await storage.listAll({ prefix })).objects.map((o) => o.key).sort();
}
