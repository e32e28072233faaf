/**
 * A reference for the ingest benchmark's (b): the least work any copy-on-write MERGE does to
 * apply the same new files to the same table, written by hand in DuckDB. It reads and dedupes the
 * new files, finds the data files holding their keys (key ranges from the log's stats, taken
 * before the clock starts, then a key-column scan), rewrites each touched file without its
 * updated rows plus their new versions in key order, and writes the new keys to one file.
 *
 * It skips what a Delta writer cannot: no commit, no file stats, no job state, no checks,
 * no 'stale' comparison against stored rows. Its time over the full reload is a floor for (b)
 * while updates rewrite whole files (no deletion vectors).
 */
import { join } from 'node:path';
import { openTable } from '../lib/tables.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';
import { LocalStorage } from '../../src/storage/local.js';
import { timed, type Timed } from './clock.js';
import { withSession } from './session.js';

/** What the floor applies, and where. */
export interface CowFloorSpec {
  /** Delta table folder (read only). */
  table: string;
  /** Absolute paths of the new Parquet files. */
  newFiles: readonly string[];
  /** Folder for the files it writes. */
  out: string;
  key: string;
  orderBy: string;
}

/** What the floor wrote, to check it did the job's work. */
export interface CowFloorOutput {
  filesRewritten: number;
  rowsRewritten: number;
  updated: number;
  inserted: number;
}

/** A data file and its key range, from the table's log. */
interface KeyedFile {
  path: string;
  min: unknown;
  max: unknown;
}

/** Run the floor once on a fresh session; the clock includes opening DuckDB, as the job's does. */
export async function runCowFloor(spec: CowFloorSpec): Promise<Timed<CowFloorOutput>> {
  const files = await keyedFiles(spec);
  return timed(() => withSession((s) => applyBatch(s, spec, files)));
}

async function keyedFiles(spec: CowFloorSpec): Promise<KeyedFile[]> {
  const snapshot = await withSession((s) =>
    openTable(LocalStorage.at(spec.table), s, { singleWriter: true }).snapshot(),
  );
  if (!snapshot) throw new Error(`[bench] no Delta table at ${spec.table}`);
  return snapshot.files.map((f) => ({
    path: join(spec.table, ...f.path.split('/')),
    min: f.parsedStats?.minValues?.[spec.key],
    max: f.parsedStats?.maxValues?.[spec.key],
  }));
}

async function applyBatch(
  s: DuckSession,
  spec: CowFloorSpec,
  files: readonly KeyedFile[],
): Promise<CowFloorOutput> {
  const k = ident(spec.key);
  // The table's columns, in its order: the landing columns plus the job's lineage columns.
  const columns = (await s.all(`DESCRIBE SELECT * FROM read_parquet(${str(files[0]!.path)})`)).map(
    (r) => ident(String(r['column_name'])),
  );
  const list = columns.join(', ');
  await s.run(
    `CREATE TEMP TABLE batch AS SELECT * EXCLUDE (filename), filename AS _source_file, now() AS _source_modified ` +
      `FROM read_parquet([${spec.newFiles.map(str).join(', ')}], filename = true) ` +
      `QUALIFY row_number() OVER (PARTITION BY ${k} ORDER BY ${ident(spec.orderBy)} DESC) = 1`,
  );
  const range = await s.one(`SELECT min(${k}) AS lo, max(${k}) AS hi FROM batch`);
  const candidates = files.filter(
    (f) =>
      f.min === undefined ||
      f.max === undefined ||
      (Number(f.max) >= Number(range?.['lo']) && Number(f.min) <= Number(range?.['hi'])),
  );
  await s.run(
    candidates.length === 0
      ? `CREATE TEMP TABLE hits (f VARCHAR, ${k} BIGINT)`
      : `CREATE TEMP TABLE hits AS SELECT filename AS f, ${k} FROM read_parquet([${candidates.map((c) => str(c.path)).join(', ')}], filename = true) WHERE ${k} IN (SELECT ${k} FROM batch)`,
  );
  const touched = (await s.all(`SELECT DISTINCT f FROM hits ORDER BY f`)).map((r) =>
    String(r['f']),
  );
  let rowsRewritten = 0;
  for (const [i, path] of touched.entries()) {
    const mine = `(SELECT ${k} FROM hits WHERE f = ${str(path)})`;
    const out = join(spec.out, `rewrite-${i}.parquet`);
    await s.run(
      `COPY (SELECT ${list} FROM (SELECT ${list} FROM read_parquet(${str(path)}) WHERE ${k} NOT IN ${mine} ` +
        `UNION ALL SELECT ${list} FROM batch WHERE ${k} IN ${mine}) ORDER BY ${k}) TO ${str(out)} (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1)`,
    );
    rowsRewritten += await rowsIn(s, out);
  }
  const inserts = join(spec.out, 'insert.parquet');
  await s.run(
    `COPY (SELECT ${list} FROM batch WHERE ${k} NOT IN (SELECT ${k} FROM hits) ORDER BY ${k}) ` +
      `TO ${str(inserts)} (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1)`,
  );
  const updated = Number((await s.one('SELECT count(*) AS n FROM hits'))?.['n'] ?? 0);
  return {
    filesRewritten: touched.length,
    rowsRewritten,
    updated,
    inserted: await rowsIn(s, inserts),
  };
}

async function rowsIn(s: DuckSession, path: string): Promise<number> {
  return Number((await s.one(`SELECT count(*) AS n FROM read_parquet(${str(path)})`))?.['n'] ?? 0);
}
