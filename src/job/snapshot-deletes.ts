/**
 * Snapshot sources (`source.snapshot`): the batch of the newest full extract (./deliveries.ts)
 * also deletes the keys the table holds and the extract lacks, in the same MERGE and commit
 * (../engine/snapshot-deletes.ts). A bound keeps a cut-off or empty extract from emptying the
 * table: more than `source.maxDeleteShare` of the table's keys is refused (exit 1, nothing
 * committed, the counts named) unless this run says `--allow-large-delete`.
 */
import type { Snapshot } from '../delta/snapshot.js';
import { SOURCE_FILE, SOURCE_MODIFIED } from '../engine/load.js';
import { SNAPSHOT_ABSENT, stageAbsentKeys, type AbsentKeys } from '../engine/snapshot-deletes.js';
import { SnapshotDeleteRefusedError } from '../errors.js';
import type { LoadedBatch } from './load-batch.js';
import type { JobScope } from './scope.js';

const EXTRACT_TABLE = 'tidemark_snapshot_batch';

/** The extract's batch with the delete rows of absent keys, and how the MERGE tells them. */
export interface ExtractBatch extends AbsentKeys {
  /** DuckDB table of the batch to MERGE. */
  table: string;
  /** The MERGE's deleteWhen: the job's, or a delete row of an absent key. */
  deleteWhen: string;
  /** The batch column to leave out of the table. */
  flagColumn: string;
}

/** Build the extract's batch, refusing it when it deletes more than the bound allows. */
export async function extractBatch(
  scope: JobScope,
  snapshot: Snapshot,
  batch: LoadedBatch,
): Promise<ExtractBatch> {
  const { job, ctx } = scope;
  const absent = await stageAbsentKeys({
    session: scope.session,
    storage: scope.table.storage,
    spool: scope.spool,
    snapshot,
    batch: batch.table,
    batchRows: batch.rowsRead,
    keyColumns: job.target.key!,
    orderBy: job.target.orderBy!,
    carry: [SOURCE_MODIFIED, SOURCE_FILE],
    output: EXTRACT_TABLE,
  });
  const share = absent.tableKeys === 0 ? 0 : absent.absent / absent.tableKeys;
  if (share > job.source.maxDeleteShare && ctx.allowLargeDelete !== true) {
    await absent.drop();
    const pct = (n: number) => `${(n * 100).toFixed(1).replace(/\.0$/, '')} %`;
    throw new SnapshotDeleteRefusedError(
      `[job] ${job.name}: the newest snapshot would delete ${absent.absent} of the ${absent.tableKeys} keys in ${scope.table.uri} (${pct(share)}), ` +
        `more than source.maxDeleteShare (${pct(job.source.maxDeleteShare)}): an empty or cut-off extract? Nothing was committed. ` +
        'If the extract is complete, run again with --allow-large-delete (this run only), or raise source.maxDeleteShare',
      {
        context: {
          uri: scope.table.uri,
          version: snapshot.version,
          field: 'source.maxDeleteShare',
          absentKeys: absent.absent,
          tableKeys: absent.tableKeys,
          maxDeleteShare: job.source.maxDeleteShare,
        },
      },
    );
  }
  const deleteWhen = job.target.deleteWhen
    ? `(${job.target.deleteWhen}) OR ${SNAPSHOT_ABSENT}`
    : SNAPSHOT_ABSENT;
  return { ...absent, table: EXTRACT_TABLE, deleteWhen, flagColumn: SNAPSHOT_ABSENT };
}
