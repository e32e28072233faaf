/**
 * Snapshot sources (`source.snapshot`): the batch of the newest full extract (./deliveries.ts)
 * also deletes the keys the table holds and the extract lacks, in the same MERGE and commit
 * (../engine/snapshot-deletes.ts). A bound keeps a cut-off or empty extract from emptying the
 * table: more than `source.maxDeleteShare` of the table's keys is refused (exit 1, nothing
 * committed, the counts named) unless this run says `--allow-large-delete`.
 *
 * scd2 mode closes instead: the keys whose current version is open and that the extract lacks
 * get a delete event at the extract's as-of time (`source.snapshotAsOf`, one value on every row),
 * which takes scd2's own delete path (tombstones included), so history stays the one events
 * arriving in order give. The as-of is never guessed: a missing, NULL, mixed or incomparable one
 * is refused, and so is an empty extract (it cannot say when its keys ended). The newest as-of
 * applied is kept in the job's state: an extract older than it closes nothing, since the newer
 * one's unchanged rows (no-ops) left no trace in the table that could stop it.
 */
import type { Snapshot } from '../delta/snapshot.js';
import { SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW } from '../engine/load.js';
import { asOfBefore, readAsOf } from '../engine/snapshot-as-of.js';
import { SNAPSHOT_ABSENT, stageAbsentKeys, type AbsentKeys } from '../engine/snapshot-deletes.js';
import { scd2Columns } from '../config/schema.js';
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
  const absent = await stageAbsentKeys({
    ...absentKeysOf(scope, snapshot, batch),
    carry: [SOURCE_MODIFIED, SOURCE_FILE],
  });
  await refuseLargeDelete(scope, snapshot, absent, 'delete');
  return withDeleteFlag(scope, absent);
}

/** An scd2 extract: the batch to write (with its closes), and the as-of to record in the state. */
export interface Scd2Extract {
  /** The batch with the delete rows of its closes; null when it closes nothing (no table yet, or an older extract). */
  closes: ExtractBatch | null;
  /** The extract's as-of in orderBy's type, as text (the state keeps the newest applied). */
  asOf: string;
  /** True when an extract older than the newest applied was passed over for closing. */
  older: boolean;
}

/**
 * scd2 mode: check the extract's as-of, then stage its closes (none when the table does not exist
 * yet, or the as-of is older than `applied`, the newest one applied), refusing them past the bound.
 * `files` are the batch's source files (as `_source_file` names them), for the messages.
 */
export async function scd2Extract(
  scope: JobScope,
  snapshot: Snapshot | null,
  batch: LoadedBatch,
  files: readonly string[],
  applied: string | undefined,
): Promise<Scd2Extract> {
  const { job, session } = scope;
  const asOf = await readAsOf({
    session,
    batch: batch.table,
    rows: batch.rowsRead,
    column: job.source.snapshotAsOf!,
    orderBy: job.target.orderBy!,
    snapshot,
    files,
    prefix: `[job] ${job.name}:`,
  });
  const text = asOf.text;
  const older = applied !== undefined && (await asOfBefore(session, applied, asOf));
  if (older)
    scope.ctx.logger.warn(
      { job: job.name, table: scope.table.uri, asOf: text, applied },
      `[job] ${job.name}: the extract's ${job.source.snapshotAsOf} (${text}) is older than that of the newest extract applied (${applied}): its rows are loaded, it closes no key`,
    );
  if (snapshot === null || older) return { closes: null, asOf: text, older };
  const history = scd2Columns(job.target);
  const absent = await stageAbsentKeys({
    ...absentKeysOf(scope, snapshot, batch),
    carry: [],
    current: history.isCurrent,
    closeAt: asOf.value,
    // A version another extract repeats is left as it is: its lineage names the file that first held it.
    unchangedBesides: [
      SOURCE_FILE,
      SOURCE_MODIFIED,
      SOURCE_ROW,
      job.source.snapshotAsOf!,
      history.validFrom,
      history.validTo,
      history.isCurrent,
    ],
  });
  await refuseLargeDelete(scope, snapshot, absent, 'close');
  return { closes: withDeleteFlag(scope, absent), asOf: text, older };
}

/** What both modes' compare is given: the table's snapshot, the extract's batch, the job's key and orderBy. */
function absentKeysOf(scope: JobScope, snapshot: Snapshot, batch: LoadedBatch) {
  const { job } = scope;
  return {
    session: scope.session,
    storage: scope.table.storage,
    spool: scope.spool,
    snapshot,
    batch: batch.table,
    batchRows: batch.rowsRead,
    keyColumns: job.target.key!,
    orderBy: job.target.orderBy!,
    output: EXTRACT_TABLE,
  };
}

function withDeleteFlag(scope: JobScope, absent: AbsentKeys): ExtractBatch {
  const deleteWhen = scope.job.target.deleteWhen
    ? `(${scope.job.target.deleteWhen}) OR ${SNAPSHOT_ABSENT}`
    : SNAPSHOT_ABSENT;
  return { ...absent, table: EXTRACT_TABLE, deleteWhen, flagColumn: SNAPSHOT_ABSENT };
}

/** More than `source.maxDeleteShare` of the keys deleted (closed) is refused unless the run allows it. */
async function refuseLargeDelete(
  scope: JobScope,
  snapshot: Snapshot,
  absent: AbsentKeys,
  verb: 'delete' | 'close',
): Promise<void> {
  const { job, ctx } = scope;
  const share = absent.tableKeys === 0 ? 0 : absent.absent / absent.tableKeys;
  if (share <= job.source.maxDeleteShare || ctx.allowLargeDelete === true) return;
  await absent.drop();
  const pct = (n: number) => `${(n * 100).toFixed(1).replace(/\.0$/, '')} %`;
  const keys = verb === 'delete' ? 'keys' : 'keys with an open current version';
  throw new SnapshotDeleteRefusedError(
    `[job] ${job.name}: the newest snapshot would ${verb} ${absent.absent} of the ${absent.tableKeys} ${keys} in ${scope.table.uri} (${pct(share)}), ` +
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
