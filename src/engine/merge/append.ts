/**
 * Append mode (no key): the batch's rows become new data files, staged as a blind append
 * (Spark's WRITE, mode Append). Nothing of the table is read, so concurrent writers rarely
 * conflict with it; exactly-once comes from the caller's txn action, committed with it.
 * Creates the table from the batch's schema when it does not exist; new batch columns are added
 * to it per `schemaEvolution` (a metaData action in the same commit). Every row is checked against
 * the table's constraints before any file is written. An append needs no change data files even
 * when the table records a change data feed: readers take its adds as inserts. Rows go to new
 * files in the batch's order, or sorted by the clustering columns of a clustered table.
 * Source files the caller says the table may hold already (`existingSources`) are looked up by
 * their lineage column: their earlier rows are replaced in the same commit, or an unchanged file is
 * left out (./source-files.ts); such a commit reads the files it scanned and is no blind append.
 */
import { clusteringColumns } from '../../delta/clustering.js';
import { addFileFor } from '../../delta/file-actions.js';
import type { CommitRequest } from '../../delta/transaction.js';
import { bytesOf, writeAndUpload } from '../data-file-io.js';
import { ident } from '../sql.js';
import { Stopwatch } from '../stopwatch.js';
import type { AppendOptions, WriteTarget } from './options.js';
import { WRITE_PHASES, writeSummary, type StagedWrite, type WriteWatch } from './results.js';
import { checkConstraints, prepareConstraintChecks, type ConstraintCheck } from './constraints.js';
import { DEFAULT_SOURCE_FILE_COLUMN } from './options.js';
import { refuseEmptyPartitionStrings } from './partition-strings.js';
import { stageSourceReplacement } from './source-files.js';
import {
  metadataActions,
  newTableRequest,
  outputOptionsFor,
  prepareTarget,
  type TargetTable,
} from './target.js';
import { DELETE_FLAG, dropAll, tempTables } from './temp-names.js';

/** Stage the append of the batch; see the module comment. The caller commits `request`. */
export async function stageAppend(opts: AppendOptions): Promise<StagedWrite> {
  const clock: WriteWatch = new Stopwatch(WRITE_PHASES);
  const tables = tempTables();
  // Written files are not needed once uploaded.
  const scratch = await opts.spool.child('append');
  try {
    const { snapshot } = opts;
    const target = await prepareTarget(opts.session, opts, { snapshot, batchTable: tables.batch });
    await checkEveryRow(opts, target, tables.batch);
    const out = outputOptionsFor({ ...opts, spool: scratch }, target);
    const now = Date.now();
    // Exactly once per file version: what the table already holds of the batch's files (./source-files.ts).
    const sources =
      snapshot !== null && opts.existingSources !== undefined
        ? await stageSourceReplacement({
            session: opts.session,
            snapshot,
            target,
            batch: tables.batch,
            sourceColumn: opts.sourceFileColumn ?? DEFAULT_SOURCE_FILE_COLUMN,
            out,
            existing: opts.existingSources,
            uri: opts.storage.uri,
            now,
            ...(opts.signal ? { signal: opts.signal } : {}),
          })
        : null;
    const rows =
      sources && sources.alreadyHeld.length > 0
        ? await countRows(opts, tables.batch)
        : target.batch.rows;
    clock.lap('prepare');
    const columns = target.plan.mappings.map((m) => ident(m.target)).join(', ');
    const sizing = { targetFileRows: opts.targetFileRows, rowsAtMost: rows };
    // A clustered table's new files are sorted by its clustering columns, so they stay prunable by their stats.
    const clustering = snapshot ? clusteringColumns(snapshot) : [];
    const order = clustering.length > 0 ? ` ORDER BY ${clustering.map(ident).join(', ')}` : '';
    const added =
      rows > 0
        ? await writeAndUpload(
            out,
            `SELECT ${columns} FROM ${ident(tables.batch)}${order}`,
            'append',
            sizing,
          )
        : [];
    clock.lap('write');
    const adds = added.map((f) => ({ add: addFileFor(f, { modificationTime: now }) }));
    const replacing = sources !== null && sources.actions.length > 0;
    const allAdded = [...added, ...(sources?.added ?? [])];
    const metrics = {
      numFiles: String(added.length),
      numOutputRows: String(rows),
      numOutputBytes: String(bytesOf(added)),
      ...(replacing
        ? {
            numDeletedRows: String(sources.rowsDeleted),
            numRemovedFiles: String(sources.removed.length),
          }
        : {}),
    };
    const request: CommitRequest =
      snapshot === null
        ? newTableRequest(target, {
            configuration: { ...target.properties, ...opts.tableProperties },
            added,
            now,
            operationMetrics: metrics,
          })
        : {
            actions: [
              ...metadataActions(target, sources?.enableDvs ?? false),
              ...(sources?.actions ?? []),
              ...adds,
            ],
            operation: 'WRITE',
            operationParameters: {
              mode: 'Append',
              partitionBy: target.partitionColumns,
              ...(replacing ? { replacedSourceFiles: sources.replaced } : {}),
            },
            operationMetrics: metrics,
            // Replacing reads the files it scanned: a concurrent remove of one of them conflicts.
            read: {
              readVersion: snapshot.version,
              partitions: [],
              files: sources?.scanned ?? [],
              appIds: [...(opts.appIds ?? [])],
            },
            isBlindAppend: !replacing,
          };
    return {
      request,
      changesTable: request.actions.length > 0,
      summary: writeSummary(
        {
          sourceRows: target.batch.rows,
          inserted: rows,
          filesAdded: allAdded.length,
          bytesAdded: bytesOf(allAdded),
          filesRemoved: sources?.removed.length ?? 0,
          filesWithNewDv: sources?.dvFiles ?? 0,
          dvBytes: sources?.dvBytes ?? 0,
          sourcesReplaced: sources?.replaced ?? [],
          sourcesAlreadyHeld: sources?.alreadyHeld ?? [],
          rowsReplaced: sources?.rowsDeleted ?? 0,
          created: snapshot === null,
        },
        clock,
      ),
    };
  } finally {
    await dropAll(opts.session, tables);
    await scratch.close();
  }
}

/**
 * Fail before anything is written when a batch row breaks a table constraint (./constraints.ts)
 * or holds a value a partition column cannot keep (./partition-strings.ts). scd2 (`stored`): only
 * the rows stored as versions, named by `keys`; a delete row (`DELETE_FLAG`) only closes one, and
 * carries little more than its key and time (a snapshot's absent key, a CDC delete). Returns the
 * prepared checks, for scd2 to check the rows it actually writes with (./scd2.ts).
 */
export async function checkEveryRow(
  opts: WriteTarget,
  target: TargetTable,
  batch: string,
  stored?: { keys: readonly string[] },
): Promise<ConstraintCheck[]> {
  const rows = {
    sql: `SELECT * FROM ${ident(batch)}${stored ? ` WHERE NOT ${ident(DELETE_FLAG)}` : ''}`,
    keys: stored?.keys ?? [],
    lineage: target.batch.lineage,
    uri: opts.storage.uri,
  };
  await refuseEmptyPartitionStrings(opts.session, {
    ...rows,
    schema: target.schema,
    partitionColumns: target.partitionColumns,
  });
  const checks = await prepareConstraintChecks(opts.session, {
    schema: target.schema,
    metadata: opts.snapshot?.metadata ?? { configuration: opts.tableProperties ?? {} },
    uri: opts.storage.uri,
    relation: batch,
  });
  await checkConstraints(opts.session, checks, rows);
  return checks;
}

async function countRows(opts: AppendOptions, table: string): Promise<number> {
  const row = await opts.session.one(`SELECT count(*) AS n FROM ${ident(table)}`);
  return Number(row?.['n'] ?? 0);
}
