/**
 * A Delta table handled by this engine: its checkpoints read and written by a DuckDB session,
 * with scratch files in a spool.
 */
import { DeltaTable, type DeltaTableOptions } from '../delta/table.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import { duckCheckpointIO } from './checkpoint-io.js';
import type { DuckSession } from './duckdb.js';

/** The table at `storage`'s root (it need not exist yet). No I/O. */
export function openTable(
  storage: Storage,
  engine: { session: DuckSession; spool: Spool },
  opts: Omit<DeltaTableOptions, 'checkpointIO'> = {},
): DeltaTable {
  return DeltaTable.open(storage, {
    ...opts,
    checkpointIO: duckCheckpointIO(engine.session, engine.spool),
  });
}
