/**
 * The direct way to write an unpartitioned relation that fits in one data file: ONE `COPY … TO`
 * that reads, sorts (when the relation does) and writes in a single parallel pipeline, instead of
 * staging the rows in a table and copying the file out of it (./data-files.ts). Most writes of an
 * hourly job are such writes: a MERGE's inserts and the rewrite of the one file it touched.
 *
 * Only one file: DuckDB's own file rotation (ROW_GROUPS_PER_FILE) does not keep a sorted
 * relation's order across files when it writes in parallel, and key-ordered files are what make
 * the MERGE's stats pruning work; bigger writes are staged and split exactly.
 *
 * Stats are those of the values in the file: the COPY returns the Parquet writer's (./copy-stats.ts),
 * in the form the staged path's aggregates give them (./file-stats.ts); where the writer's would
 * differ (long strings, NaN, arrays and maps), the file is read back with those aggregates.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeLogPath } from '../delta/partition-encode.js';
import { copiedRows, RETURN_STATS, statsRowFromCopy } from './copy-stats.js';
import type { DuckSession, Row } from './duckdb.js';
import { statsAggregatesSql, statsFromRow, type StatsLeaf } from './file-stats.js';
import { safeReadPath } from './safe-alias.js';
import { str } from './sql.js';
import type { WrittenFile } from './written-file.js';
import { parquetOptions } from './parquet-options.js';

/** What to write: the cast data columns (`sql AS name`) of an unpartitioned relation. */
export interface DirectWrite {
  /** FROM clause of the relation (a table name or a parenthesized query). */
  from: string;
  /** One SELECT item per data column, already cast and named as the column. */
  select: string[];
  /** Leaves that get stats, their `sql` naming the file's columns. */
  leaves: StatsLeaf[];
  localDir: string;
  /** Folder below the table root for the file; default the root. */
  folder?: string;
  codec: 'zstd' | 'snappy';
  /** COPY options beyond the codec (field ids). */
  copyOptions?: string[];
  /** The file's row limit: a relation with more rows is not kept (null is returned). */
  targetFileRows: number | undefined;
  /** Runs the COPY and returns its result rows (as allJson), a failed read or cast the writer's error. */
  runCopy(sql: string): Promise<Row[]>;
}

/**
 * Write the relation as one file; returns it (none when the relation has no rows), or null when it
 * has more than `targetFileRows` rows (the file is removed; write staged instead).
 */
export async function writeDirect(
  session: DuckSession,
  w: DirectWrite,
): Promise<WrittenFile[] | null> {
  await mkdir(w.localDir, { recursive: true });
  const fileName = `part-00000-${randomUUID()}-c000.${w.codec}.parquet`;
  const localPath = join(w.localDir, fileName);
  let keep = false;
  try {
    const options = [...parquetOptions(w.codec), ...(w.copyOptions ?? []), RETURN_STATS];
    const [copied] = await w.runCopy(
      `COPY (SELECT ${w.select.join(', ')} FROM ${w.from}) TO ${str(localPath)} (${options.join(', ')})`,
    );
    const rows = copiedRows(copied);
    if (rows === 0 || (w.targetFileRows !== undefined && rows > w.targetFileRows))
      return rows === 0 ? [] : null;
    const row =
      (copied && statsRowFromCopy(copied, w.leaves)) ??
      (await readStats(session, localPath, w.leaves));
    keep = true;
    const relativePath = w.folder ? `${w.folder}/${fileName}` : fileName;
    return [
      {
        localPath,
        relativePath,
        logPath: encodeLogPath(relativePath),
        partitionValues: {},
        size: (await stat(localPath)).size,
        stats: statsFromRow(row, w.leaves),
      },
    ];
  } finally {
    if (!keep) await rm(localPath, { force: true });
  }
}

/** The stats row of the file, read back from it. */
async function readStats(
  session: DuckSession,
  path: string,
  leaves: readonly StatsLeaf[],
): Promise<Row> {
  const read = `read_parquet(${str(safeReadPath(path))}, hive_partitioning = false)`;
  return (await session.one(`SELECT ${statsAggregatesSql(leaves)} FROM ${read}`))!;
}
