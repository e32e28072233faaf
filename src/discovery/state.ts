/**
 * The discovery state a job commits with its data: the watermark plus the files already
 * loaded that a later run can still see (those in the lookback partitions, or inside the
 * settle window). It is plain JSON, versioned, and bounded: entries that no run can list
 * again are pruned, so it never grows with the landing zone's history.
 */
import { TidemarkError } from '../errors.js';
import { parseId } from './calendar.js';

/** Version written by this code; `upgradeState` reads this and every earlier version. */
export const STATE_VERSION = 1;

/** A file loaded from a partition. */
export interface PartitionEntry {
  key: string;
  etag: string;
  /** Partition id (`2026-03-05`, `2026-03-05T07`). */
  partition: string;
}

/** State of partition discovery. */
export interface PartitionState {
  stateVersion: 1;
  mode: 'partition';
  /** Newest partition loaded from (id). The next run rescans from `lookback` partitions before it. */
  watermark: string;
  /**
   * Oldest partition whose loaded files `loaded` lists in full. A run never rescans below
   * it, so a larger `lookback` cannot make it reload files it no longer remembers.
   */
  rememberedFrom: string;
  /** Files loaded in partitions >= rememberedFrom. */
  loaded: PartitionEntry[];
}

/** A file loaded by modification time. */
export interface ModifiedEntry {
  key: string;
  etag: string;
  /** Epoch ms the file is windowed by (its LastModified, or its folder's `_SUCCESS` time when later and required). */
  lastModified: number;
  /** Set when this ETag is an overwrite that `onOverwrite: ignore` did not load. */
  ignored?: true;
}

/** State of modification-time discovery. */
export interface ModifiedState {
  stateVersion: 1;
  mode: 'modified';
  /**
   * Epoch ms: newest LastModified loaded (never after the store clock). The next run re-lists
   * from watermark - settle, but never from below `rememberedAfter`.
   */
  watermark: number;
  /**
   * Epoch ms: `loaded` lists every loaded file with lastModified after this (absent in states
   * written before it: watermark - settle). A run never re-lists below it, so a wider `settle`
   * cannot make it reload files it no longer remembers; it only rises.
   */
  rememberedAfter?: number;
  /** Files loaded with lastModified > rememberedAfter. */
  loaded: ModifiedEntry[];
  /**
   * With `incrementalListing`: the newest key (in byte order) a listing found older than its
   * window; keys sorting by time, every key up to it is older than any later window, so runs
   * list only after it (S3 StartAfter). Absent: list everything.
   */
  listAfter?: string;
}

/**
 * State of notification discovery. Which files were loaded is the job's ledger (every file, by
 * key and ETag), committed with the data as in modification-time discovery; this only says when
 * the last reconciling listing was complete.
 */
export interface NotificationState {
  stateVersion: 1;
  mode: 'notifications';
  /** Epoch ms: newest LastModified loaded (what `status` shows; it decides nothing), or null before the first file. */
  watermark: number | null;
  /** Epoch ms (the store's clock) when the last reconciling listing whose files all committed began; absent: none yet. */
  reconciledAt?: number;
}

/** Persisted discovery state of any mode. */
export type DiscoveryState = PartitionState | ModifiedState | NotificationState;

/** Discovery state that cannot be read (corrupt, or written by a newer tidemark). */
export class DiscoveryStateError extends TidemarkError {}

/**
 * Validate a state read back from a commit and upgrade it to the current version.
 * Throws DiscoveryStateError naming what is wrong.
 */
export function upgradeState(raw: unknown): DiscoveryState {
  const fail = (why: string) =>
    new DiscoveryStateError(`[discovery] cannot read the committed discovery state: ${why}`, {
      kind: 'terminal',
    });
  if (typeof raw !== 'object' || raw === null) throw fail('it is not an object');
  const s = raw as Record<string, unknown>;
  if (s.stateVersion !== STATE_VERSION) {
    throw fail(
      typeof s.stateVersion === 'number' && s.stateVersion > STATE_VERSION
        ? `it has stateVersion ${s.stateVersion}, written by a newer tidemark (this one reads up to ${STATE_VERSION})`
        : `unknown stateVersion ${JSON.stringify(s.stateVersion)}`,
    );
  }
  if (s.mode === 'notifications') {
    if (s.watermark !== null && (typeof s.watermark !== 'number' || !Number.isFinite(s.watermark)))
      throw fail(`bad watermark ${JSON.stringify(s.watermark)}`);
    if (
      s.reconciledAt !== undefined &&
      (typeof s.reconciledAt !== 'number' || !Number.isFinite(s.reconciledAt))
    )
      throw fail(`bad reconciledAt ${JSON.stringify(s.reconciledAt)}`);
    return raw as NotificationState;
  }
  if (!Array.isArray(s.loaded)) throw fail('`loaded` is not a list');
  if (s.mode === 'partition') {
    if (typeof s.watermark !== 'string' || !parseId(s.watermark))
      throw fail(`bad partition watermark ${JSON.stringify(s.watermark)}`);
    if (typeof s.rememberedFrom !== 'string' || !parseId(s.rememberedFrom))
      throw fail(`bad rememberedFrom ${JSON.stringify(s.rememberedFrom)}`);
    if (!s.loaded.every(isPartitionEntry))
      throw fail('a `loaded` entry lacks key, etag or partition');
    return raw as PartitionState;
  }
  if (s.mode === 'modified') {
    if (typeof s.watermark !== 'number' || !Number.isFinite(s.watermark))
      throw fail(`bad timestamp watermark ${JSON.stringify(s.watermark)}`);
    if (
      s.rememberedAfter !== undefined &&
      (typeof s.rememberedAfter !== 'number' || !Number.isFinite(s.rememberedAfter))
    ) {
      throw fail(`bad rememberedAfter ${JSON.stringify(s.rememberedAfter)}`);
    }
    if (!s.loaded.every(isModifiedEntry))
      throw fail('a `loaded` entry lacks key, etag or lastModified');
    return raw as ModifiedState;
  }
  throw fail(`unknown mode ${JSON.stringify(s.mode)}`);
}

function isEntry(e: unknown): e is Record<string, unknown> {
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof (e as { key?: unknown }).key === 'string' &&
    typeof (e as { etag?: unknown }).etag === 'string'
  );
}

function isPartitionEntry(e: unknown): boolean {
  return isEntry(e) && typeof e.partition === 'string';
}

function isModifiedEntry(e: unknown): boolean {
  return isEntry(e) && typeof e.lastModified === 'number';
}
