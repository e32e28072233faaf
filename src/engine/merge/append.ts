/**
 * Append mode (no key): the batch's rows become new data files, staged as a blind append
 * (Spark's WRITE, mode Append). Nothing of the table is read, so concurrent writers rarely
 * conflict with it; exactly-once comes from the caller's txn action, committed with it.
 * Creates the table from the batch's schema when it does not exist; new batch columns are added
 * to it per `schemaEvolution` (a metaData action in the same commit). Every row is checked against
 * the table's constraints before any file is written. An append needs no change data files even
 * when the table records a change data feed: readers take its adds as inserts.
 */
import { addFileFor } from '../../delta/file-actions.js';
import { createTableRequest } from '../../delta/table-create.js';
import type { CommitRequest } from '../../delta/transaction.js';
import { ident } from '../sql.js';
import type { AppendOptions } from './options.js';
import { bytesOf, outputOptionsFor, writeAndUpload } from './output.js';
import type { StagedAppend } from './results.js';
import { checkConstraints, prepareConstraintChecks } from './constraints.js';
import { prepareTarget, schemaActions, type TargetTable } from './target.js';
import { dropAll, tempTables } from './temp-names.js';

/** Stage the append of the batch; see the module comment. The caller commits `request`. */
export async function stageAppend(opts: AppendOptions): Promise<StagedAppend> {
  const started = performance.now();
  const tables = tempTables();
  // Written files are not needed once uploaded.
  const scratch = await opts.spool.child('append');
  try {
    const { snapshot } = opts;
    const target = await prepareTarget(opts.session, opts, { snapshot, batchTable: tables.batch });
    await checkEveryRow(opts, target, tables.batch);
    const prepared = performance.now();
    const out = outputOptionsFor({ ...opts, spool: scratch }, target);
    const columns = target.plan.mappings.map((m) => ident(m.target)).join(', ');
    const sizing = { targetFileRows: opts.targetFileRows, rowsAtMost: target.batch.rows };
    const added = target.batch.rows > 0 ? await writeAndUpload(out, `SELECT ${columns} FROM ${ident(tables.batch)}`, 'append', sizing) : [];
    const written = performance.now();
    const now = Date.now();
    const adds = added.map((f) => ({ add: addFileFor(f, { modificationTime: now }) }));
    const metrics = { numFiles: String(added.length), numOutputRows: String(target.batch.rows), numOutputBytes: String(bytesOf(added)) };
    const request: CommitRequest =
      snapshot === null
        ? createTableRequest(
            {
              schema: target.schema,
              partitionColumns: target.partitionColumns,
              configuration: { ...target.properties, ...opts.tableProperties },
              actions: adds,
              operationMetrics: metrics,
            },
            now,
          )
        : {
            actions: [...schemaActions(target), ...adds],
            operation: 'WRITE',
            operationParameters: { mode: 'Append', partitionBy: target.partitionColumns },
            operationMetrics: metrics,
            read: { readVersion: snapshot.version, partitions: [], files: [], appIds: [...(opts.appIds ?? [])] },
            isBlindAppend: true,
          };
    return {
      request,
      changesTable: request.actions.length > 0,
      summary: {
        inserted: target.batch.rows,
        filesAdded: added.length,
        bytesAdded: bytesOf(added),
        created: snapshot === null,
        durations: { prepare: Math.round(prepared - started), write: Math.round(written - prepared), total: Math.round(written - started) },
      },
    };
  } finally {
    await dropAll(opts.session, tables);
    await scratch.close();
  }
}

/** Fail before anything is written when a batch row breaks a table constraint (./constraints.ts). */
async function checkEveryRow(opts: AppendOptions, target: TargetTable, batch: string): Promise<void> {
  const checks = await prepareConstraintChecks(opts.session, {
    schema: target.schema,
    metadata: opts.snapshot?.metadata ?? { configuration: opts.tableProperties ?? {} },
    uri: opts.storage.uri,
    relation: batch,
  });
  await checkConstraints(opts.session, checks, { sql: `SELECT * FROM ${ident(batch)}`, keys: [], lineage: target.batch.lineage, uri: opts.storage.uri });
}
