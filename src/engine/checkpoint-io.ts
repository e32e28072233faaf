/**
 * The engine's implementation of the Delta layer's CheckpointIO: checkpoint Parquet is read
 * and written by DuckDB, so `delta/` never touches DuckDB itself.
 */
import type { CheckpointIO } from '../delta/transaction.js';
import { readCheckpointActions } from './checkpoint-reader.js';
import { writeCheckpointActions } from './checkpoint-writer.js';
import type { DuckSession } from './duckdb.js';

/** CheckpointIO backed by a DuckDB session. */
export function duckCheckpointIO(session: DuckSession): CheckpointIO {
  return {
    readActions: (localPaths) => readCheckpointActions(session, localPaths),
    writeActions: (actions, localPath) => writeCheckpointActions(session, actions, localPath),
  };
}
