/**
 * Helpers for the MERGE tests: a fresh table folder on local disk with a DuckDB session, batches
 * created from SQL, and the table read back through the reader (loadSnapshot + scan).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSnapshot } from '../../../src/delta/replay.js';
import type { Snapshot } from '../../../src/delta/snapshot.js';
import type { DeltaTable } from '../../../src/delta/table.js';
import { DuckSession, type Row } from '../../../src/engine/duckdb.js';
import { withTableScan } from '../../../src/engine/scan.js';
import { ident } from '../../../src/engine/sql.js';
import { LocalStorage } from '../../../src/storage/local.js';
import type { Storage } from '../../../src/storage/storage.js';
import {
  checkpointIO,
  mergeAndCommit,
  openTable,
  scanSource,
} from '../../../scripts/lib/tables.js';

/** A table folder and a session; `close` removes both. */
export interface Fixture {
  session: DuckSession;
  dir: string;
  storage: Storage;
  table: DeltaTable;
  close(): Promise<void>;
}

/** A new empty table folder on local disk. */
export async function localFixture(session: DuckSession): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-merge-test-'));
  const storage = new LocalStorage(dir);
  return fixtureOn(session, storage, {
    dir,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  });
}

/** A fixture on any storage (e.g. S3Storage on s3rver, which needs `singleWriter`). */
export function fixtureOn(
  session: DuckSession,
  storage: Storage,
  opts: { dir?: string; cleanup?: () => Promise<void>; singleWriter?: boolean } = {},
): Fixture {
  const table = openTable(storage, session, { singleWriter: opts.singleWriter ?? false });
  return { session, dir: opts.dir ?? '', storage, table, close: opts.cleanup ?? (async () => {}) };
}

/** Replace the DuckDB table `name` with the rows of `sql`. */
export async function makeBatch(session: DuckSession, name: string, sql: string): Promise<string> {
  await session.run(`CREATE OR REPLACE TABLE ${ident(name)} AS ${sql}`);
  return name;
}

/** MERGE with the fixture's session and table, committed with the extras (as the job commits its state). */
export function merge(
  f: Fixture,
  opts: Parameters<typeof mergeAndCommit>[2],
): ReturnType<typeof mergeAndCommit> {
  return mergeAndCommit(f.table, f.session, opts);
}

/** The latest snapshot, read the way any reader does. */
export async function snapshotOf(f: Fixture): Promise<Snapshot> {
  const snapshot = await loadSnapshot(f.storage, checkpointIO(f.session));
  if (!snapshot) throw new Error('the table does not exist');
  return snapshot;
}

/** Every row of the table (JSON-safe values), ordered by `orderBy`. */
export async function readRows(f: Fixture, orderBy: string): Promise<Row[]> {
  const snapshot = await snapshotOf(f);
  return withTableScan(f.session, scanSource(f.storage), snapshot, (relation) =>
    f.session.allJson(`SELECT * FROM (${relation}) ORDER BY ${orderBy}`),
  );
}
