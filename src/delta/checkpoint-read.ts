/**
 * Reading a checkpoint's actions, whatever its kind (docs/delta-protocol.md, Checkpoints):
 * classic and multi-part Parquet through the engine's CheckpointIO; UUID-named V2 checkpoints in
 * JSON (parsed here) or Parquet; and for V2 spec checkpoints (UUID-named, or classic-named with a
 * `checkpointMetadata` row) the sidecar files their `sidecar` actions name, which hold the adds
 * and removes. The result is the actions replay needs; `checkpointMetadata` and `sidecar` are left out.
 */
import { DeltaLogError } from '../errors.js';
import type { Storage } from '../storage/storage.js';
import { parseCommit, type Action, type SidecarFile } from './actions.js';
import type { CheckpointRef } from './log-listing.js';
import { SIDECAR_DIR } from './log-files.js';
import type { CheckpointIO } from './checkpoint-io.js';

/** Every action the checkpoint holds, its sidecars' included. */
export async function readCheckpoint(
  storage: Storage,
  io: CheckpointIO,
  ref: CheckpointRef,
): Promise<Action[]> {
  const top = await readTopLevel(storage, io, ref);
  const sidecars: SidecarFile[] = [];
  const actions: Action[] = [];
  for (const action of top) {
    if ('sidecar' in action) sidecars.push(action.sidecar);
    else if ('checkpointMetadata' in action)
      checkVersion(action.checkpointMetadata.version, ref, storage.uri);
    else actions.push(action);
  }
  if (sidecars.length === 0) return actions;
  const keys = sidecars.map((s) => sidecarKey(s, ref, storage.uri));
  return [
    ...actions,
    ...(await io.readActions(storage, keys)).filter((a) => 'add' in a || 'remove' in a),
  ];
}

/** The checkpoint's own file(s): a JSON V2 checkpoint is one action per line, like a commit. */
async function readTopLevel(
  storage: Storage,
  io: CheckpointIO,
  ref: CheckpointRef,
): Promise<Action[]> {
  const key = ref.keys[0]!;
  if (ref.kind !== 'v2' || !key.endsWith('.json')) return io.readActions(storage, ref.keys);
  const bytes = await storage.read(key);
  if (bytes === null) {
    throw new DeltaLogError(
      `[delta] checkpoint ${key} of ${storage.uri} disappeared while reading the log`,
      {
        context: { uri: storage.uri, version: ref.version, key },
      },
    );
  }
  return parseCommit(new TextDecoder().decode(bytes), ref.version, storage.uri);
}

/** A V2 checkpoint names its own version; one that names another is not this version's state. */
function checkVersion(version: number, ref: CheckpointRef, uri: string): void {
  if (Number(version) === ref.version) return;
  throw new DeltaLogError(
    `[delta] checkpoint ${ref.keys[0]} of ${uri} says it holds version ${version}, not ${ref.version}`,
    {
      context: { uri, version: ref.version, key: ref.keys[0] },
    },
  );
}

/** The key of a sidecar: its (URI-encoded) path is relative to `_delta_log/_sidecars/`. */
function sidecarKey(sidecar: SidecarFile, ref: CheckpointRef, uri: string): string {
  let name: string;
  try {
    name = decodeURIComponent(sidecar.path);
  } catch (cause) {
    throw new DeltaLogError(
      `[delta] checkpoint ${ref.keys[0]} of ${uri} names a sidecar with a malformed path: ${sidecar.path}`,
      {
        context: { uri, version: ref.version, key: sidecar.path },
        cause,
      },
    );
  }
  if (
    name === '' ||
    name.split('/').some((part) => part === '..' || part === '') ||
    /^[a-z][a-z0-9+.-]*:/i.test(name)
  ) {
    throw new DeltaLogError(
      `[delta] checkpoint ${ref.keys[0]} of ${uri} names a sidecar outside _delta_log/_sidecars/: ${sidecar.path}`,
      {
        context: { uri, version: ref.version, key: sidecar.path },
      },
    );
  }
  return SIDECAR_DIR + name;
}
