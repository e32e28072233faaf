/**
 * Writes a classic (V1) Delta checkpoint: one Parquet row per action, one struct column per
 * action type, exactly one of them non-null in each row (docs/delta-protocol.md, Checkpoints; PROTOCOL.md#Checkpoint-Schema).
 *
 * The actions are staged as NDJSON next to the target and read back by DuckDB's read_json with
 * an explicit column spec, which turns JSON objects into MAP(VARCHAR, VARCHAR) and leaves absent
 * actions NULL; one COPY then writes the Parquet. No per-row INSERTs, so tens of thousands of
 * adds take well under a second.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { once } from 'node:events';
import type { Action } from '../delta/actions.js';
import type { DuckSession } from './duckdb.js';
import { str } from './sql.js';

const STRING_MAP = 'MAP(VARCHAR, VARCHAR)';
const DELETION_VECTOR =
  'STRUCT(storageType VARCHAR, pathOrInlineDv VARCHAR, "offset" INTEGER, sizeInBytes INTEGER, cardinality BIGINT, maxRowIndex BIGINT)';

/** Spark's checkpoint columns, in Spark's order. */
export const CHECKPOINT_COLUMNS: Readonly<Record<string, string>> = {
  txn: 'STRUCT(appId VARCHAR, "version" BIGINT, lastUpdated BIGINT)',
  add:
    `STRUCT(path VARCHAR, partitionValues ${STRING_MAP}, size BIGINT, modificationTime BIGINT, dataChange BOOLEAN, ` +
    `stats VARCHAR, tags ${STRING_MAP}, deletionVector ${DELETION_VECTOR}, baseRowId BIGINT, ` +
    'defaultRowCommitVersion BIGINT, clusteringProvider VARCHAR)',
  remove:
    'STRUCT(path VARCHAR, deletionTimestamp BIGINT, dataChange BOOLEAN, extendedFileMetadata BOOLEAN, ' +
    `partitionValues ${STRING_MAP}, size BIGINT, deletionVector ${DELETION_VECTOR}, baseRowId BIGINT, ` +
    'defaultRowCommitVersion BIGINT)',
  metaData:
    `STRUCT(id VARCHAR, "name" VARCHAR, description VARCHAR, format STRUCT(provider VARCHAR, "options" ${STRING_MAP}), ` +
    `schemaString VARCHAR, partitionColumns VARCHAR[], "configuration" ${STRING_MAP}, createdTime BIGINT)`,
  protocol:
    'STRUCT(minReaderVersion INTEGER, minWriterVersion INTEGER, readerFeatures VARCHAR[], writerFeatures VARCHAR[])',
  domainMetadata: 'STRUCT(domain VARCHAR, "configuration" VARCHAR, removed BOOLEAN)',
};

/** A V2 checkpoint's sidecar holds file actions only (PROTOCOL.md "Sidecar Files"). */
export const SIDECAR_COLUMNS: Readonly<Record<string, string>> = {
  add: CHECKPOINT_COLUMNS['add']!,
  remove: CHECKPOINT_COLUMNS['remove']!,
};

/** Largest single action (a metaData with a huge schema) read_json accepts. */
const MAX_OBJECT_BYTES = 256 * 1024 * 1024;

/**
 * Write the actions as a checkpoint Parquet file at `localPath` with these columns (a V1
 * checkpoint's by default, or a sidecar's); returns the row count. Throws for actions that have no
 * column (commitInfo and cdc never go into checkpoints; a sidecar takes adds and removes only).
 */
export async function writeCheckpointActions(
  session: DuckSession,
  actions: readonly Action[],
  localPath: string,
  columns: Readonly<Record<string, string>> = CHECKPOINT_COLUMNS,
): Promise<number> {
  for (const action of actions) {
    const kind = Object.keys(action)[0] ?? '';
    if (!(kind in columns))
      throw new Error(`[checkpoint] a '${kind}' action cannot be written to this checkpoint file`);
  }
  const staging = `${localPath}.staging.ndjson`;
  try {
    await writeNdjson(staging, actions);
    await session.run(
      `COPY (${selectActions(staging, columns)}) TO ${str(localPath)} (FORMAT parquet)`,
    );
  } finally {
    await rm(staging, { force: true });
  }
  return actions.length;
}

/** The SELECT reading staged actions with every checkpoint column typed. */
function selectActions(ndjsonPath: string, columns: Readonly<Record<string, string>>): string {
  const spec = Object.entries(columns)
    .map(([name, type]) => `${str(name)}: ${str(type)}`)
    .join(', ');
  return (
    `SELECT * FROM read_json(${str(ndjsonPath)}, format = 'newline_delimited', ` +
    `columns = {${spec}}, maximum_object_size = ${MAX_OBJECT_BYTES})`
  );
}

/** Stream actions to an NDJSON file, respecting back-pressure. */
async function writeNdjson(path: string, actions: readonly Action[]): Promise<void> {
  const out = createWriteStream(path);
  const closed = once(out, 'close');
  closed.catch(() => undefined); // the error surfaces from write/drain or the await below
  try {
    for (const action of actions) {
      if (!out.write(JSON.stringify(action) + '\n')) await once(out, 'drain');
    }
  } finally {
    out.end();
  }
  await closed;
}
