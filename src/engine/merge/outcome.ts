/**
 * What a MERGE did: row counts read from the classification tables, and its summary.
 */
import type { DuckSession } from '../duckdb.js';
import type { PhaseClock } from './clock.js';
import { bytesOf } from '../data-file-io.js';
import { countsSql } from './plan.js';
import type { MergeCounts, MergeSummary } from './results.js';
import type { TempTables } from './temp-names.js';

/** Row counts per action (see countsSql). */
export async function readCounts(session: DuckSession, tables: TempTables, sourceRows: number): Promise<MergeCounts> {
  const row = (await session.one(countsSql(tables))) ?? {};
  const n = (k: string) => Number(row[k] ?? 0);
  return {
    sourceRows,
    inserted: n('inserted'),
    updated: n('updated'),
    deleted: n('deleted'),
    skippedStale: n('stale'),
    skippedByTombstone: n('buried'),
    unchanged: n('unchanged'),
    deleteNotFound: n('delete_not_found'),
    rowsCopied: n('rows_copied'),
  };
}

/** The outcome of the write phase. */
export interface Outcome {
  counts: MergeCounts;
  added: readonly { size: number }[];
  /** Files no longer in the table: rewritten ones, and those whose every row is now deleted. */
  removed: readonly { size: number }[];
  /** Files read and written again. */
  rewritten: readonly { size: number }[];
  filesScanned: number;
  filesRead: number;
  /** Files given a new deletion vector, and the size of the `.bin` file holding them. */
  dvFiles: number;
  dvBytes: number;
  /** Change data files written (tables that record a change data feed). */
  changeFiles: number;
  created: boolean;
}

/** The summary of an outcome, with the phase durations so far. */
export function summaryOf(o: Outcome, clock: PhaseClock): MergeSummary {
  return {
    ...o.counts,
    filesAdded: o.added.length,
    filesRemoved: o.removed.length,
    bytesRewritten: bytesOf(o.rewritten),
    bytesAdded: bytesOf(o.added),
    filesScanned: o.filesScanned,
    filesRead: o.filesRead,
    filesWithNewDv: o.dvFiles,
    dvBytes: o.dvBytes,
    changeFilesAdded: o.changeFiles,
    created: o.created,
    durations: clock.durations(),
  };
}
