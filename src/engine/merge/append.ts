/**
 * Append mode (no key): the batch's rows become new data files, committed as a blind append
 * (Spark's WRITE, mode Append). Nothing of the table is read, so concurrent writers rarely
 * conflict with it; exactly-once comes from the caller's txn action in `extraActions`.
 * Creates the table from the batch's schema when it does not exist; new batch columns are added
 * to it per `schemaEvolution` (a metaData action in the same commit).
 */
import { addFileFor } from '../../delta/table.js';
import type { CommitRequest } from '../../delta/transaction.js';
import { ident } from '../sql.js';
import { dropAll, tempTables } from './names.js';
import { bytesOf, outputOptionsFor, writeAndUpload, type OutputOptions } from './output.js';
import { openSpool } from './spool.js';
import { prepareTarget, schemaActions } from './target.js';
import type { AppendOptions, AppendResult } from './types.js';

/** Append the batch to the table; see the module comment. */
export async function appendToTable(opts: AppendOptions): Promise<AppendResult> {
  const started = performance.now();
  const tables = tempTables();
  const spool = await openSpool(opts.spoolDir);
  try {
    const snapshot = opts.snapshot !== undefined ? opts.snapshot : await opts.table.snapshot();
    const target = await prepareTarget(opts.session, opts, { snapshot, batchTable: tables.batch });
    const prepared = performance.now();
    const out: OutputOptions = outputOptionsFor(opts, target, spool.dir);
    const columns = target.plan.mappings.map((m) => ident(m.target)).join(', ');
    const sizing = { targetFileRows: opts.targetFileRows, rowsAtMost: target.batch.rows };
    const added = target.batch.rows > 0 ? await writeAndUpload(out, `SELECT ${columns} FROM ${ident(tables.batch)}`, 'append', sizing) : [];
    if (added.length > 0) await opts.afterWrite?.();
    const written = performance.now();
    const now = Date.now();
    const actions = [...schemaActions(target), ...added.map((f) => ({ add: addFileFor(f, { modificationTime: now }) })), ...(opts.extraActions ?? [])];
    const metrics = { numFiles: String(added.length), numOutputRows: String(target.batch.rows), numOutputBytes: String(bytesOf(added)) };
    const commitOpts = opts.signal ? { signal: opts.signal } : {};
    let version: number | null = null;
    if (snapshot === null) {
      const created = await opts.table.create(
        { schema: target.schema, partitionColumns: target.partitionColumns, actions, operationMetrics: metrics },
        commitOpts,
      );
      version = created.version;
    } else if (actions.length > 0) {
      const request: CommitRequest = {
        actions,
        operation: 'WRITE',
        operationParameters: { mode: 'Append', partitionBy: target.partitionColumns },
        operationMetrics: metrics,
        read: { readVersion: snapshot.version, partitions: [], files: [], appIds: [...(opts.appIds ?? [])] },
        isBlindAppend: true,
      };
      version = (await opts.table.commit(request, commitOpts)).version;
    }
    const done = performance.now();
    return {
      version,
      inserted: target.batch.rows,
      filesAdded: added.length,
      bytesAdded: bytesOf(added),
      created: snapshot === null,
      durations: {
        prepare: Math.round(prepared - started),
        write: Math.round(written - prepared),
        commit: Math.round(done - written),
        total: Math.round(done - started),
      },
    };
  } finally {
    await dropAll(opts.session, tables);
    await spool.close();
  }
}
