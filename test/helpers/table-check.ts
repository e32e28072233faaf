/**
 * An independent check of a Delta table's invariants at every version, for tests that must
 * prove a table stays valid through crashes, races and deletion-vector MERGEs. Snapshots come
 * from tidemark's log replay (checked against Spark's tables in test/delta/shared-tables.test.ts);
 * the data files, row counts and deletion vectors are checked against the bytes on storage.
 *
 * Per version: every live data file exists and holds `numRecords` rows; no path is live twice;
 * every deletion vector loads (size, CRC, cardinality) and deletes only rows the file has;
 * stats of a file with a DV do not claim tight bounds; a table with DVs lists the feature
 * (reader 3 / writer 7); and every remove in a commit names a file with the exact DV that was
 * live just before it.
 */
import type { AddFile, DeletionVectorDescriptor } from '../../src/delta/actions.js';
import { dvUniqueId, loadDeletionVector } from '../../src/delta/deletion-vectors/index.js';
import { listLog, latestVersion } from '../../src/delta/log-listing.js';
import { readCommits } from '../../src/delta/replay.js';
import type { DeltaTable } from '../../src/delta/table.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';

/** What the check looked at; `problems` is empty for a valid table. */
export interface TableCheck {
  versions: number;
  /** Live files with a deletion vector at the latest version. */
  filesWithDv: number;
  /** Versions at which some live file had a deletion vector. */
  versionsWithDv: number;
  problems: string[];
}

const idOf = (path: string, dv: DeletionVectorDescriptor | undefined | null) =>
  `${path}#${dv ? dvUniqueId(dv) : ''}`;

/**
 * Checks of one table repeated as it grows: each `check()` looks only at the versions committed
 * since the previous one (a loop that checks after every commit stays linear), and file row
 * counts are read once.
 */
export class TableChecker {
  private checkedUpTo = -1;
  private versionsWithDv = 0;
  private readonly rowCounts = new Map<string, number>();

  constructor(
    private readonly table: DeltaTable,
    private readonly session: DuckSession,
  ) {}

  /** Check the versions not checked yet; problems of those versions only. */
  async check(): Promise<TableCheck> {
    const result = await checkVersions(
      this.table,
      this.session,
      this.checkedUpTo + 1,
      this.rowCounts,
    );
    this.checkedUpTo = result.latest;
    this.versionsWithDv += result.versionsWithDv;
    return { ...result, versionsWithDv: this.versionsWithDv };
  }
}

async function checkVersions(
  table: DeltaTable,
  session: DuckSession,
  from: number,
  rowCounts: Map<string, number>,
): Promise<TableCheck & { latest: number }> {
  const listing = await listLog(table.storage);
  const latest = latestVersion(listing);
  const problems: string[] = [];
  const rowsOf = async (path: string): Promise<number | null> => {
    if (rowCounts.has(path)) return rowCounts.get(path)!;
    const local = table.storage.localPath(decodeURIComponent(path));
    if (local === null) {
      const bytes = await table.storage.read(decodeURIComponent(path));
      if (bytes === null) return null;
      rowCounts.set(path, -1); // not local: existence checked, row count not
      return -1;
    }
    const row = await session
      .one(`SELECT count(*) AS n FROM read_parquet(${str(local)})`)
      .catch(() => null);
    const n = row == null ? null : Number(row['n']);
    if (n !== null) rowCounts.set(path, n);
    return n;
  };

  const first = Math.max(from, listing.commits[0]?.version ?? 0);
  const toRead = listing.commits.filter((c) => c.version >= first);
  const commits = await readCommits(table.storage, toRead);
  let filesWithDv = 0;
  let versionsWithDv = 0;
  for (let v = first; v <= latest; v++) {
    const snapshot = await table.snapshot({ version: v });
    if (!snapshot) {
      problems.push(`v${v}: no snapshot`);
      continue;
    }
    const where = (what: string) => problems.push(`v${v}: ${what}`);
    const seen = new Set<string>();
    let dvs = 0;
    for (const f of snapshot.files) {
      if (seen.has(f.path)) where(`${f.path} is live twice`);
      seen.add(f.path);
      const rows = await rowsOf(f.path);
      if (rows === null) {
        where(`${f.path} is live but missing or unreadable`);
        continue;
      }
      const numRecords = f.parsedStats?.numRecords;
      if (rows >= 0 && numRecords !== undefined && numRecords !== rows)
        where(`${f.path}: stats say ${numRecords} rows, the file has ${rows}`);
      if (!f.deletionVector) continue;
      dvs++;
      if (f.parsedStats && f.parsedStats.tightBounds !== false)
        where(`${f.path} has a DV but its stats claim tight bounds`);
      try {
        const deleted = await loadDeletionVector(
          table.storage,
          f.deletionVector,
          snapshot.tableUri,
          { dataFile: f.path },
        );
        const max = deleted.max;
        if (rows >= 0 && max !== undefined && max >= rows)
          where(`${f.path}: its DV deletes row ${max}, the file has ${rows} rows`);
        if (rows >= 0 && deleted.cardinality >= rows)
          where(`${f.path}: its DV deletes every row, the file should have been removed`);
      } catch (err) {
        where(`${f.path}: its DV does not load: ${(err as Error).message}`);
      }
    }
    if (dvs > 0) {
      versionsWithDv++;
      const p = snapshot.protocol;
      const listed =
        p.minReaderVersion === 3 &&
        p.minWriterVersion === 7 &&
        p.readerFeatures?.includes('deletionVectors') &&
        p.writerFeatures?.includes('deletionVectors');
      if (!listed) where(`files have DVs but the protocol is ${JSON.stringify(p)}`);
    }
    if (v === latest) filesWithDv = dvs;

    // Removes name what was live before this commit, DV included.
    const actions = commits[v - first] ?? [];
    if (v > (listing.commits[0]?.version ?? 0)) {
      const before = await table.snapshot({ version: v - 1 });
      const live = new Set(
        (before?.files ?? []).map((f: AddFile) => idOf(f.path, f.deletionVector)),
      );
      for (const a of actions) {
        if (!('remove' in a) || !a.remove) continue;
        if (!live.has(idOf(a.remove.path, a.remove.deletionVector)))
          where(`remove of ${a.remove.path} names a file or DV not live at v${v - 1}`);
      }
    }
  }
  return {
    versions: Math.max(0, latest - first + 1),
    filesWithDv,
    versionsWithDv,
    problems,
    latest,
  };
}
