/**
 * Writing a V2 checkpoint (PROTOCOL.md "V2 Spec", "UUID-named checkpoint", "Sidecar Files") for
 * tables with the `v2Checkpoint` feature (`TableConfig.v2Checkpoints`), in the protocol's order:
 *
 *   1. the adds and removes, as one Parquet sidecar `_delta_log/_sidecars/<uuid>.parquet`
 *      (none when the table has no file actions);
 *   2. the UUID-named top-level file `_delta_log/<N>.checkpoint.<uuid>.json`: one
 *      `checkpointMetadata` {version N}, then protocol, metaData, txns and live domains, then one
 *      `sidecar` action naming the sidecar by its bare file name.
 *
 * Every file gets a fresh UUID name and is written once, so a failed checkpoint leaves orphans
 * only, and two writers checkpointing one version write two valid checkpoints.
 */
import { randomUUID } from 'node:crypto';
import type { Storage } from '../storage/storage.js';
import { serializeCommit, type Action } from './actions.js';
import { LOG_DIR, SIDECAR_DIR, v2CheckpointFileName } from './log-files.js';
import type { CheckpointIO } from './checkpoint-io.js';

/** What to checkpoint: the state's actions (as ./checkpoint.ts builds them) at `version`. */
export interface V2CheckpointInput {
  version: number;
  actions: readonly Action[];
  numOfAddFiles: number;
  /** Clock (ms) for the sidecar's modificationTime. */
  now: number;
}

/** The checkpoint written: its top-level key, its actions (sidecars' included) and bytes (sidecars' included). */
export interface WrittenV2Checkpoint {
  key: string;
  size: number;
  sizeInBytes: number;
}

/** Write the sidecar, then the top-level file; see the module comment. */
export async function writeV2Checkpoint(
  storage: Storage,
  io: CheckpointIO,
  input: V2CheckpointInput,
): Promise<WrittenV2Checkpoint> {
  const fileActions = input.actions.filter((a) => 'add' in a || 'remove' in a);
  const otherActions = input.actions.filter((a) => !('add' in a || 'remove' in a));
  const top: Action[] = [
    {
      checkpointMetadata: {
        version: input.version,
        tags: { numOfAddFiles: String(input.numOfAddFiles) },
      },
    },
    ...otherActions,
  ];
  let sidecarBytes = 0;
  if (fileActions.length > 0) {
    const name = `${randomUUID()}.parquet`;
    const { sizeInBytes } = await io.writeActions(storage, SIDECAR_DIR + name, fileActions, {
      sidecar: true,
    });
    sidecarBytes = sizeInBytes;
    top.push({ sidecar: { path: name, sizeInBytes, modificationTime: input.now, tags: {} } });
  }
  const key = LOG_DIR + v2CheckpointFileName(input.version, randomUUID(), 'json');
  const body = serializeCommit(top);
  await storage.write(key, body, { contentType: 'application/json' });
  return {
    key,
    size: top.length + fileActions.length,
    sizeInBytes: Buffer.byteLength(body) + sidecarBytes,
  };
}
