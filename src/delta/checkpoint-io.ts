/**
 * The seam between the Delta layer and the engine for checkpoint files (docs/architecture.md,
 * Seams): the engine implements it with DuckDB (engine/checkpoint-io.ts).
 */
import type { Storage } from '../storage/storage.js';
import type { Action } from './actions.js';

/**
 * Reads and writes checkpoint files. Checkpoints are Parquet, which the Delta layer does not
 * decode itself: the engine implements this (DuckDB), so `delta/` stays free of DuckDB and of
 * local scratch files.
 */
export interface CheckpointIO {
  /** The actions of one checkpoint: all its parts (keys relative to the table root), any schema version. */
  readActions(storage: Storage, keys: readonly string[]): Promise<Action[]>;
  /**
   * Write these actions as checkpoint Parquet at `key` in one visible step; returns its size in
   * bytes. `sidecar`: a V2 checkpoint's sidecar, whose only columns are `add` and `remove`.
   */
  writeActions(
    storage: Storage,
    key: string,
    actions: readonly Action[],
    opts?: { sidecar?: boolean },
  ): Promise<{ sizeInBytes: number }>;
}
