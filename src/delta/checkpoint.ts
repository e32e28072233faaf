/**
 * Writing checkpoints after a commit (docs/delta-protocol.md, "Checkpoints").
 *
 * After version N is committed and N is a multiple of the checkpoint interval, the snapshot
 * at N is written as `_delta_log/<N>.checkpoint.parquet` (one upload: S3 PUT and the local
 * driver's rename are both atomic), or, on tables with the `v2Checkpoint` feature, as a UUID-named
 * V2 checkpoint (./checkpoint-v2.ts); then `_last_checkpoint` is overwritten to point at it.
 * A checkpoint only speeds up readers: if writing it fails, the commit stands and the table
 * stays correct, so the error is returned, never thrown. Two writers checkpointing the same
 * version write the same state, so that race is harmless.
 */
import type { Storage } from '../storage/storage.js';
import type { Action, Protocol } from './actions.js';
import { writeV2Checkpoint } from './checkpoint-v2.js';
import { TableConfig } from './table-config.js';
import { checkpointKey, LAST_CHECKPOINT_KEY, LOG_DIR, padVersion } from './log-files.js';
import { readLastCheckpoint } from './log-listing.js';
import type { Snapshot } from './snapshot.js';
import type { CheckpointIO } from './checkpoint-io.js';

/** Spark's default `delta.checkpointInterval`. */
export const DEFAULT_CHECKPOINT_INTERVAL = 10;
/** Spark's default `delta.deletedFileRetentionDuration` (1 week). */
export const DEFAULT_DELETED_FILE_RETENTION_MS = 7 * 24 * 3600 * 1000;

export interface CheckpointOptions {
  /** Commits between checkpoints; default: the table's `delta.checkpointInterval`, else 10. */
  interval?: number;
  /** Clock for the expiry of removes (ms). */
  now?: () => number;
}

/** What `maybeWriteCheckpoint` did. */
export type CheckpointOutcome =
  | { written: false; reason: 'not-due' | 'exists' }
  | { written: false; reason: 'failed'; error: unknown }
  | { written: true; version: number; size: number; sizeInBytes: number; numOfAddFiles: number };

/**
 * Write the checkpoint for `snapshot.version` when it is due. Never throws: a failure is
 * returned as `{written: false, reason: 'failed', error}`.
 */
export async function maybeWriteCheckpoint(
  storage: Storage,
  io: CheckpointIO,
  snapshot: Snapshot,
  opts: CheckpointOptions = {},
): Promise<CheckpointOutcome> {
  const interval = opts.interval ?? checkpointInterval(snapshot.metadata.configuration);
  if (snapshot.version === 0 || snapshot.version % interval !== 0)
    return { written: false, reason: 'not-due' };
  try {
    if (await hasCheckpoint(storage, snapshot.version)) return { written: false, reason: 'exists' };
    return await writeCheckpoint(storage, io, snapshot, opts.now ?? Date.now);
  } catch (error) {
    return { written: false, reason: 'failed', error };
  }
}

/** True when a checkpoint of any kind (classic, multi-part, UUID-named) exists for the version. */
async function hasCheckpoint(storage: Storage, version: number): Promise<boolean> {
  const listing = await storage.listAll({
    prefix: `${LOG_DIR}${padVersion(version)}.checkpoint.`,
    delimiter: '/',
    pageSize: 1,
  });
  return listing.objects.length > 0;
}

/**
 * Write the checkpoint for the snapshot's version unconditionally, then `_last_checkpoint`: a
 * UUID-named V2 checkpoint when the table has the `v2Checkpoint` feature (never a classic one
 * alone, never multi-part), else a classic V1 one.
 */
export async function writeCheckpoint(
  storage: Storage,
  io: CheckpointIO,
  snapshot: Snapshot,
  now: () => number = Date.now,
): Promise<CheckpointOutcome & { written: true }> {
  const retention = deletedFileRetentionMs(snapshot.metadata.configuration);
  const actions = checkpointActions(snapshot, now() - retention);
  const numOfAddFiles = snapshot.files.length;
  if (TableConfig.of(snapshot.protocol, snapshot.metadata).v2Checkpoints) {
    const written = await writeV2Checkpoint(storage, io, {
      version: snapshot.version,
      actions,
      numOfAddFiles,
      now: now(),
    });
    const hint = {
      version: snapshot.version,
      size: written.size,
      sizeInBytes: written.sizeInBytes,
      numOfAddFiles,
    };
    await updateLastCheckpoint(storage, hint);
    return { written: true, ...hint };
  }
  const { sizeInBytes } = await io.writeActions(storage, checkpointKey(snapshot.version), actions);
  const hint = { version: snapshot.version, size: actions.length, sizeInBytes, numOfAddFiles };
  await updateLastCheckpoint(storage, hint);
  return { written: true, ...hint };
}

/**
 * Point `_last_checkpoint` at the new checkpoint, unless it already points at a newer one. The
 * file is replaced whole, so no stale field of an older checkpoint (Spark's `v2Checkpoint`) stays.
 */
async function updateLastCheckpoint(storage: Storage, hint: { version: number }): Promise<void> {
  const current = await readLastCheckpoint(storage);
  if (current && current.version > hint.version) return;
  await storage.write(LAST_CHECKPOINT_KEY, JSON.stringify(hint), {
    contentType: 'application/json',
  });
}

/**
 * The state to checkpoint: protocol, metaData, every txn, live domains, all live adds and the
 * removes not yet expired (deleted after `removeCutoff`). Never commitInfo or cdc.
 * File actions carry dataChange=false, as Spark writes them.
 */
export function checkpointActions(snapshot: Snapshot, removeCutoff: number): Action[] {
  const actions: Action[] = [
    { protocol: checkpointProtocol(snapshot.protocol) },
    { metaData: snapshot.metadata },
  ];
  for (const txn of snapshot.txns.values()) actions.push({ txn });
  for (const domainMetadata of snapshot.domains.values()) {
    if (!domainMetadata.removed) actions.push({ domainMetadata });
  }
  for (const { parsedStats: _parsed, ...add } of snapshot.files)
    actions.push({ add: { ...add, dataChange: false } });
  for (const remove of snapshot.removes) {
    if ((remove.deletionTimestamp ?? 0) > removeCutoff)
      actions.push({ remove: { ...remove, dataChange: false } });
  }
  return actions;
}

/** Feature lists only where the protocol version uses them: null below reader 3 / writer 7, a list at them. */
function checkpointProtocol(p: Protocol): Protocol {
  return {
    minReaderVersion: p.minReaderVersion,
    minWriterVersion: p.minWriterVersion,
    readerFeatures: p.minReaderVersion >= 3 ? (p.readerFeatures ?? []) : null,
    writerFeatures: p.minWriterVersion >= 7 ? (p.writerFeatures ?? []) : null,
  };
}

/** `delta.checkpointInterval` when it is a positive integer, else 10. */
export function checkpointInterval(configuration: Record<string, string>): number {
  const n = Number(configuration['delta.checkpointInterval']);
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_CHECKPOINT_INTERVAL;
}

/** `delta.deletedFileRetentionDuration` in ms, else 1 week. */
export function deletedFileRetentionMs(configuration: Record<string, string>): number {
  const text = configuration['delta.deletedFileRetentionDuration'];
  return (text === undefined ? null : parseIntervalMs(text)) ?? DEFAULT_DELETED_FILE_RETENTION_MS;
}

const UNIT_MS: Readonly<Record<string, number>> = {
  week: 7 * 24 * 3600 * 1000,
  day: 24 * 3600 * 1000,
  hour: 3600 * 1000,
  minute: 60 * 1000,
  second: 1000,
  millisecond: 1,
  microsecond: 0.001,
};
const UNIT_ALIASES: Readonly<Record<string, string>> = {
  min: 'minute',
  sec: 'second',
  ms: 'millisecond',
  us: 'microsecond',
};

/**
 * Parse a Spark calendar interval loosely: `interval 1 weeks`, `7 days`, `interval 1 week 12 hours`,
 * `30 minutes`. Months and years (Spark refuses them for durations) and anything else give null.
 */
export function parseIntervalMs(text: string): number | null {
  const words = text
    .trim()
    .toLowerCase()
    .replace(/^interval\s+/, '')
    .split(/\s+/);
  if (words.length === 0 || words.length % 2 !== 0) return null;
  let total = 0;
  for (let i = 0; i < words.length; i += 2) {
    const amount = Number(words[i]);
    const word = words[i + 1]!;
    const singular = word.replace(/s$/, '');
    const unit = UNIT_MS[UNIT_ALIASES[word] ?? UNIT_ALIASES[singular] ?? singular];
    if (!Number.isFinite(amount) || unit === undefined) return null;
    total += amount * unit;
  }
  return total;
}
