/**
 * The engine's implementation of the Delta layer's CheckpointIO: checkpoint Parquet is read and
 * written by DuckDB on local files, downloaded into (./local-copies.ts) or staged in the run's spool
 * when the table is not on local disk, so `delta/` never touches DuckDB or scratch files itself.
 */
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CheckpointIO } from '../delta/checkpoint-io.js';
import type { Spool } from '../spool/spool.js';
import { readCheckpointActions } from './checkpoint-reader.js';
import {
  CHECKPOINT_COLUMNS,
  SIDECAR_COLUMNS,
  writeCheckpointActions,
} from './checkpoint-writer.js';
import type { DuckSession } from './duckdb.js';
import { localCopies } from './local-copies.js';

/** CheckpointIO backed by a DuckDB session, with scratch files in `spool`. */
export function duckCheckpointIO(session: DuckSession, spool: Spool): CheckpointIO {
  return {
    async readActions(storage, keys) {
      const copies = await localCopies(storage, keys, spool, { folder: 'checkpoint-in' });
      try {
        return await readCheckpointActions(
          session,
          keys.map((key) => copies.pathOf(key)),
        );
      } finally {
        // Scratch copies go as soon as they are read: a run reads and writes many checkpoints.
        await copies.dispose();
      }
    },
    async writeActions(storage, key, actions, opts = {}) {
      const dir = await spool.folder('checkpoint-out');
      try {
        const local = join(dir, 'checkpoint.parquet');
        await writeCheckpointActions(
          session,
          actions,
          local,
          opts.sidecar ? SIDECAR_COLUMNS : CHECKPOINT_COLUMNS,
        );
        const { size } = await stat(local);
        // One upload: an S3 PUT and the local driver's rename are both atomic, so no reader sees half a checkpoint.
        await storage.upload(key, local, { contentType: 'application/octet-stream' });
        return { sizeInBytes: size };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
