/**
 * Replace mode: the batch becomes the whole table in one commit (Spark's WRITE, mode Overwrite):
 * every live data file is removed (dataChange true) and the batch's rows are written as new files.
 * Creates the table when it does not exist. New batch columns are added per `schemaEvolution`, as
 * an append adds them; table columns the batch lacks read as NULL in its rows. Every row is checked
 * against the table's constraints before any file is written. On a table that records a change
 * data feed the commit carries change files: every stored row (deletion vectors applied) as a
 * `delete`, every new row as an `insert`, so readers need not read the removes (whose deletion
 * vectors the protocol leaves ambiguous for the feed). The commit reads every file it removes, so a
 * concurrent writer that changed the table in between conflicts with it. An append-only table is
 * refused when it holds data.
 */
import { clusteringColumns } from '../../delta/clustering.js';
import { addFileFor, removeFileFor } from '../../delta/file-actions.js';
import type { Snapshot } from '../../delta/snapshot.js';
import { totalRecords } from '../../delta/stats.js';
import { TableConfig } from '../../delta/table-config.js';
import type { CommitRequest } from '../../delta/transaction.js';
import { AppendOnlyTableError } from '../../errors.js';
import { bytesOf, localDataFiles, writeAndUpload, type OutputOptions } from '../data-file-io.js';
import { scanRelation } from '../scan.js';
import { ident, str } from '../sql.js';
import { Stopwatch } from '../stopwatch.js';
import { checkEveryRow } from './append.js';
import { writeChangeRows, type ChangeData } from './change-files.js';
import type { WriteTarget } from './options.js';
import { WRITE_PHASES, writeSummary, type StagedWrite, type WriteWatch } from './results.js';
import {
  metadataActions,
  newTableRequest,
  outputOptionsFor,
  prepareTarget,
  type TargetTable,
} from './target.js';
import { dropAll, tempTables } from './temp-names.js';

/** Stage the replacement of the table by the batch; see the module comment. The caller commits `request`. */
export async function stageReplace(opts: WriteTarget): Promise<StagedWrite> {
  const clock: WriteWatch = new Stopwatch(WRITE_PHASES);
  const tables = tempTables();
  const scratch = await opts.spool.child('replace');
  try {
    const { snapshot } = opts;
    if (snapshot && snapshot.files.length > 0) refuseAppendOnly(snapshot, opts.storage.uri);
    const target = await prepareTarget(opts.session, opts, { snapshot, batchTable: tables.batch });
    await checkEveryRow(opts, target, tables.batch);
    const out = outputOptionsFor({ ...opts, spool: scratch }, target);
    const rows = target.batch.rows;
    clock.lap('prepare');
    const columns = target.plan.mappings.map((m) => ident(m.target));
    const clustering = snapshot ? clusteringColumns(snapshot) : [];
    const order = clustering.length > 0 ? ` ORDER BY ${clustering.map(ident).join(', ')}` : '';
    const newRows = `SELECT ${columns.join(', ')} FROM ${ident(tables.batch)}`;
    const added =
      rows > 0
        ? await writeAndUpload(out, newRows + order, 'replace', {
            targetFileRows: opts.targetFileRows,
            rowsAtMost: rows,
          })
        : [];
    const now = Date.now();
    const adds = added.map((f) => ({ add: addFileFor(f, { modificationTime: now }) }));
    if (snapshot === null) {
      const metrics = {
        numFiles: String(added.length),
        numOutputRows: String(rows),
        numOutputBytes: String(bytesOf(added)),
      };
      const request = newTableRequest(target, {
        configuration: { ...target.properties, ...opts.tableProperties },
        added,
        now,
        operationMetrics: metrics,
      });
      return staged(request, clock, {
        sourceRows: rows,
        inserted: rows,
        filesAdded: added.length,
        bytesAdded: bytesOf(added),
        created: true,
      });
    }
    const config = target.config ?? TableConfig.of(snapshot.protocol, snapshot.metadata);
    const change =
      config.recordsChangeData && (snapshot.files.length > 0 || rows > 0)
        ? await changeFiles(opts, out, target, snapshot, newRows)
        : null;
    const removes = snapshot.files.map((f) => ({
      remove: removeFileFor(f, { deletionTimestamp: now }),
    }));
    const deleted = change?.deleted ?? (await storedRows(opts, out, snapshot));
    const request: CommitRequest = {
      actions: [
        ...metadataActions(target, false),
        ...removes,
        ...adds,
        ...(change?.data.actions ?? []),
      ],
      operation: 'WRITE',
      operationParameters: { mode: 'Overwrite', partitionBy: target.partitionColumns },
      operationMetrics: {
        numFiles: String(added.length),
        numOutputRows: String(rows),
        numOutputBytes: String(bytesOf(added)),
        numRemovedFiles: String(snapshot.files.length),
        numRemovedBytes: String(snapshot.files.reduce((n, f) => n + f.size, 0)),
        numDeletedRows: String(deleted),
        numAddedChangeFiles: String(change?.data.files.length ?? 0),
      },
      // Every file removed is read: a concurrent writer that changed any of them conflicts.
      read: {
        readVersion: snapshot.version,
        partitions: 'all',
        files: snapshot.files.map((f) => f.path),
        appIds: [...(opts.appIds ?? [])],
      },
      isBlindAppend: false,
    };
    const counts = {
      sourceRows: rows,
      inserted: rows,
      deleted,
      filesAdded: added.length,
      bytesAdded: bytesOf(added),
      filesRemoved: snapshot.files.length,
      changeFilesAdded: change?.data.files.length ?? 0,
    };
    return staged(request, clock, counts);
  } finally {
    await dropAll(opts.session, tables);
    await scratch.close();
  }
}

/** The write phase ends once the data and change files are uploaded and the commit is planned. */
function staged(
  request: CommitRequest,
  clock: WriteWatch,
  counted: Parameters<typeof writeSummary>[0],
): StagedWrite {
  clock.lap('write');
  return {
    request,
    changesTable: request.actions.length > 0,
    summary: writeSummary(counted, clock),
  };
}

/** Change files of the replace: every stored row a delete, every new row an insert; and the stored rows counted. */
async function changeFiles(
  opts: WriteTarget,
  out: OutputOptions,
  target: TargetTable,
  snapshot: Snapshot,
  newRowsSql: string,
): Promise<{ data: ChangeData; deleted: number }> {
  const local = await localDataFiles(snapshot.files, {
    storage: opts.storage,
    spool: out.spool,
    folder: 'replace-scan',
    concurrency: out.concurrency,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    // Stored files read in the evolved schema: columns the batch adds are NULL in them.
    const evolved = { ...snapshot, schema: target.schema };
    const scan = await scanRelation(
      opts.session,
      { storage: opts.storage, snapshot: evolved },
      snapshot.files,
      (f) => local.paths.get(f.path)!,
    );
    try {
      const columns = target.plan.mappings.map((m) => ident(m.target)).join(', ');
      const [count] = await opts.session.all(`SELECT count(*) AS n FROM (${scan.sql})`);
      const relation = `SELECT ${columns}, ${str('delete')} AS _change_type FROM (${scan.sql}) UNION ALL SELECT ${columns}, ${str('insert')} AS _change_type FROM (${newRowsSql})`;
      return {
        data: await writeChangeRows(out, relation, opts.targetFileRows),
        deleted: Number(count?.['n'] ?? 0),
      };
    } finally {
      await scan.deleted?.drop();
    }
  } finally {
    await local.dispose();
  }
}

/**
 * The rows the table holds (deletion vectors applied): from the files' statistics, and for files
 * written without them (other tools may leave `numRecords` out) by counting their rows, so the
 * report and the commit's `numDeletedRows` never say fewer rows were removed than were.
 */
async function storedRows(
  opts: WriteTarget,
  out: OutputOptions,
  snapshot: Snapshot,
): Promise<number> {
  const counted = snapshot.files.filter((f) => f.parsedStats?.numRecords !== undefined);
  const uncounted = snapshot.files.filter((f) => f.parsedStats?.numRecords === undefined);
  const fromStats = totalRecords(counted) ?? 0;
  if (uncounted.length === 0) return fromStats;
  const local = await localDataFiles(uncounted, {
    storage: opts.storage,
    spool: out.spool,
    folder: 'replace-count',
    concurrency: out.concurrency,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    const scan = await scanRelation(
      opts.session,
      { storage: opts.storage, snapshot },
      uncounted,
      (f) => local.paths.get(f.path)!,
    );
    try {
      const [count] = await opts.session.all(`SELECT count(*) AS n FROM (${scan.sql})`);
      return fromStats + Number(count?.['n'] ?? 0);
    } finally {
      await scan.deleted?.drop();
    }
  } finally {
    await local.dispose();
  }
}

/** `delta.appendOnly` tables take no removes: a replace of one that holds data is refused before anything is written. */
function refuseAppendOnly(snapshot: Snapshot, uri: string): void {
  if (!TableConfig.of(snapshot.protocol, snapshot.metadata).appendOnly) return;
  throw new AppendOnlyTableError(
    uri,
    'replace',
    `would remove all ${snapshot.files.length} data files`,
  );
}
