/**
 * What a MERGE did: row counts read from the classification tables, and its summary.
 */
import type { DuckSession } from '../duckdb.js';
import type { PhaseClock } from './clock.js';
import { bytesOf } from './output.js';
import { countsSql } from './plan.js';
import type { MergeCounts, MergeSummary } from './results.js';
import type { TempTables } from './temp-names.js';

/** Row counts per action (see countsSql); `haveTarget` is false when no file was read in full. */
export async function readCounts(session: DuckSession, tables: TempTables, haveTarget: boolean, sourceRows: number): Promise<MergeCounts> {
  const row = (await session.one(countsSql(tables, haveTarget))) ?? {};
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
    rowsCopied: n('rows_in_rewritten') - n('updated') - n('deleted'),
  };
}

/** The outcome of the write phase. */
export interface Outcome {
  counts: MergeCounts;
  added: readonly { size: number }[];
  removed: readonly { size: number }[];
  filesScanned: number;
  filesRead: number;
  created: boolean;
}

/** The summary of an outcome, with the phase durations so far. */
export function summaryOf(o: Outcome, clock: PhaseClock): MergeSummary {
  return {
    ...o.counts,
    filesAdded: o.added.length,
    filesRemoved: o.removed.length,
    bytesRewritten: bytesOf(o.removed),
    bytesAdded: bytesOf(o.added),
    filesScanned: o.filesScanned,
    filesRead: o.filesRead,
    created: o.created,
    durations: clock.durations(),
  };
}
