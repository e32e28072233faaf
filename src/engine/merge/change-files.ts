/**
 * Writing a MERGE's change data files (PROTOCOL.md "Change Data Files"): the changes of
 * ./change-plan.ts as Parquet with the table's data columns plus `_change_type`, partitioned like
 * the data files under `_change_data/`, uploaded before the commit, which lists each in a `cdc`
 * action. Needed only when the table records a change data feed and the MERGE updates or deletes
 * rows: a commit that only adds rows is read as inserts from its adds.
 */
import { posix } from 'node:path';
import type { Action } from '../../delta/actions.js';
import { CHANGE_DATA_FOLDER, CHANGE_TYPE_COLUMN, cdcFileFor } from '../../delta/change-data.js';
import { PHYSICAL_NAME } from '../../delta/column-mapping.js';
import type { LiveFile, Snapshot } from '../../delta/snapshot.js';
import { encodeLogPath } from '../../delta/partition-encode.js';
import type { StructType } from '../../delta/schema.js';
import { writeDataFiles, type WrittenFile } from '../data-files.js';
import { changeRowsSql, preimagesSql } from './change-plan.js';
import { perFileScanSql, type HitsResult } from './matches.js';
import { uploadDataFiles, type OutputOptions } from '../data-file-io.js';
import type { TempTables } from './temp-names.js';

/** What the change files of one MERGE are made from. */
export interface ChangeDataInput {
  tables: TempTables;
  /** Table columns, in schema order. */
  columns: readonly string[];
  keys: readonly string[];
  /** The snapshot the MERGE read (in the evolved schema when it adds columns). */
  snapshot: Snapshot;
  /** The 'dv' files with updated or deleted rows, by id: their preimages are read from them. */
  dvFiles: ReadonlyMap<number, LiveFile>;
  hits: Pick<HitsResult, 'localPaths' | 'shapes' | 'deleted'>;
  /** Rows per change file, as for data files (one file per partition when unset). */
  targetFileRows?: number | undefined;
}

/** The change files written and uploaded, and their `cdc` actions. */
export interface ChangeData {
  files: WrittenFile[];
  actions: Action[];
}

/** Collect the preimages, then write and upload the change files; see the module comment. */
export async function writeChangeData(
  out: OutputOptions,
  input: ChangeDataInput,
): Promise<ChangeData> {
  out.signal?.throwIfAborted();
  await out.session.run(
    preimagesSql(input.tables, perFileScanSql(input.snapshot, input.dvFiles, input.hits)),
  );
  return writeChangeRows(
    out,
    changeRowsSql(input.tables, input.columns, input.keys),
    input.targetFileRows,
  );
}

/**
 * Write and upload change files of `relationSql`'s rows: the table's columns plus `_change_type`
 * (a replace writes every stored row as a delete and every new row as an insert: ./replace.ts).
 */
export async function writeChangeRows(
  out: OutputOptions,
  relationSql: string,
  targetFileRows?: number,
): Promise<ChangeData> {
  out.signal?.throwIfAborted();
  const written = await writeDataFiles(out.session, {
    relationSql,
    schema: withChangeType(out.schema),
    partitionColumns: out.partitionColumns,
    columnMapping: out.columnMapping,
    localDir: await out.spool.folder('change-data'),
    ...(targetFileRows === undefined ? {} : { targetFileRows }),
  });
  const files = written.map(asChangeFile);
  await uploadDataFiles(out.storage, files, {
    concurrency: out.concurrency,
    ...(out.signal ? { signal: out.signal } : {}),
  });
  return { files, actions: files.map((f) => ({ cdc: cdcFileFor(f) })) };
}

/**
 * The table schema plus the `_change_type` string column, which is not a table column: under
 * column mapping it keeps its own name as physical name and gets no field id, as Spark writes it.
 */
function withChangeType(schema: StructType): StructType {
  const metadata = { [PHYSICAL_NAME]: CHANGE_TYPE_COLUMN };
  return {
    ...schema,
    fields: [
      ...schema.fields,
      { name: CHANGE_TYPE_COLUMN, type: 'string', nullable: true, metadata },
    ],
  };
}

/** A written file moved below `_change_data/` (partition folders kept) and named `cdc-…`. */
function asChangeFile(file: WrittenFile): WrittenFile {
  const folder = posix.dirname(file.relativePath);
  const name = posix.basename(file.relativePath).replace(/^part-/, 'cdc-');
  const relativePath = posix.join(CHANGE_DATA_FOLDER, folder === '.' ? '' : folder, name);
  return { ...file, relativePath, logPath: encodeLogPath(relativePath) };
}
