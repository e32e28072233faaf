/**
 * The discovery plan: which files a run loads, every decision with its reason (for
 * `--dry-run`), what was listed, and the state to commit with the loaded data.
 */
import type { OnOverwrite } from './config.js';
import type { NotificationIntake } from './notifications/intake.js';
import type { SkippedFolder } from './partitions.js';
import type { DiscoveryState } from './state.js';
import type { RootKind } from '../storage/storage.js';

export type { SkippedFolder } from './partitions.js';

/** A file the run will load. */
export interface DiscoveredFile {
  /** Key relative to the source root. */
  key: string;
  size: number;
  lastModified: Date;
  etag: string;
  /** Partition id (partition discovery only). */
  partition?: string;
  /**
   * The time the file is ordered and windowed by: its LastModified, or (modification-time
   * discovery with `requireSuccessMarker`) its folder's `_SUCCESS` time when that is later.
   */
  arrival: Date;
  /**
   * The table may hold rows of an earlier version of this file (an overwrite being reloaded, a
   * file a backfill covered): in append mode they are replaced, or the file is not appended again
   * when it is unchanged (../engine/merge/source-files.ts).
   */
  loadedBefore?: true;
}

/** Why a file is loaded or skipped (`excluded`: left out by `source.include`/`source.exclude`). */
export type DecisionReason =
  | 'new'
  | 'already loaded'
  | 'overwritten, reloading'
  | 'overwritten since quarantined, reloading'
  | 'overwritten, ignored'
  | 'reloading after a reset'
  | 'no success marker'
  | 'not data'
  | 'excluded'
  | 'not in a partition folder'
  | 'late, behind the lookback window'
  | 'overwritten behind the lookback window'
  | 'late, behind the settle window'
  | 'overwritten behind the settle window'
  /** Notification discovery: an event named a key the store no longer holds. */
  | 'gone before it was loaded';

/**
 * Reasons of files that landed (or changed) in a partition the lookback window has passed
 * (`discover.lateCheck`), or, by modification time, that arrived with a LastModified behind the
 * settle window and the job's ledger lacks (`withPassedOver`): not loaded, and reported by name
 * so nothing is passed over in silence.
 */
export const BEHIND_WINDOW_REASONS: ReadonlySet<DecisionReason> = new Set([
  'late, behind the lookback window',
  'overwritten behind the lookback window',
  'late, behind the settle window',
  'overwritten behind the settle window',
]);

/** The decision about one listed file. */
export interface Decision {
  key: string;
  action: 'load' | 'skip';
  reason: DecisionReason;
  partition?: string;
}

/** The range a run looked at, for messages and `--dry-run`. */
export type DiscoveryWindow =
  /** `from`: the first partition loaded from; `checkedFrom`: the first listed for late files only (absent: none). */
  | { mode: 'partition'; from: string | null; until: string; checkedFrom?: string }
  | { mode: 'modified'; after: Date | null }
  /** `reconciling`: the plan includes a listing of the whole prefix. */
  | { mode: 'notifications'; reconciling: boolean };

/** What `nextStateFor` needs to fold loaded files into a state. */
export type StateBasis =
  | {
      mode: 'partition';
      lookback: number;
      /** Partitions behind the lookback window the state keeps remembering (`discover.lateCheck`). */
      lateCheck: number;
      timezone: string;
      /** The oldest partition waiting for its success marker: the watermark stays before it. */
      waitingFrom?: string;
    }
  | {
      mode: 'modified';
      settleMs: number;
      serverTime: number;
      scannedAfter: number | null;
      /** The next state's `listAfter` (incremental listing). */ listAfter?: string;
    }
  /** `reconciledAt`: the store's clock when this plan's reconciling listing began (absent: no listing). */
  | { mode: 'notifications'; reconciledAt?: number };

/** The result of discovery: nothing is downloaded yet. */
export interface DiscoveryPlan {
  mode: 'partition' | 'modified' | 'notifications';
  /** Files to load, oldest first (partition, then arrival, then key), so any prefix is a safe batch. */
  files: DiscoveredFile[];
  /**
   * A decision for every file listed in range. Files below the range (older than the
   * settle window) are only counted, in `olderThanWindow`.
   */
  decisions: Decision[];
  /** Files listed but older than the window: loaded by earlier runs or before `start`. */
  olderThanWindow: number;
  /** Prefixes listed in full (partition folders, or first-level prefixes). */
  partitionsListed: string[];
  /** Folders reported and not walked. */
  skippedFolders: SkippedFolder[];
  window: DiscoveryWindow;
  /** The store's clock at the first listing. */
  serverTime: Date;
  /** LIST requests issued (pages). */
  listRequests: number;
  onOverwrite: OnOverwrite;
  /** The state the plan started from. */
  prevState: DiscoveryState | null;
  /** The state after loading every file of the plan (= prevState when nothing loads). */
  nextState: DiscoveryState | null;
  basis: StateBasis;
  /** Overwritten files skipped by `onOverwrite: ignore`; `nextStateFor` remembers them too. */
  overwrittenIgnored: DiscoveredFile[];
  /**
   * Modification-time discovery, when asked (`DiscoverOptions.behindWindowAfter`): the data files
   * listed older than the window, for the caller to check against the files the job loaded (a
   * file copied in with its old time kept is never a candidate; `withPassedOver` names it).
   */
  behindWindow: DiscoveredFile[];
  /**
   * Partitions in the window with files but no success marker yet (`requireSuccessMarker`, by
   * partition), oldest first: their files wait, and the watermark stays before the oldest.
   */
  waiting: WaitingPartition[];
  /**
   * Set when the listing found nothing to plan from (no partition folder in range, or an empty
   * prefix): what the source holds at all, so the caller can tell "nothing new" from "nothing
   * there" (./survey.ts).
   */
  survey?: SourceSurvey;
  /** Notification discovery: the messages received and what each waits for (./notifications/intake.ts). */
  notifications?: NotificationIntake;
}

/** A partition whose files wait for its `_SUCCESS` marker. */
export interface WaitingPartition {
  partition: string;
  prefix: string;
  /** Data files waiting in it, and their bytes. */
  files: number;
  bytes: number;
  /** The oldest LastModified of those files: how long the partition has waited. */
  since: Date;
}

/** Sort files oldest first: partition, then arrival, then key (byte order is not needed: keys are only a tie-break). */
export function compareFiles(a: DiscoveredFile, b: DiscoveredFile): number {
  const pa = a.partition ?? '';
  const pb = b.partition ?? '';
  if (pa !== pb) return pa < pb ? -1 : 1;
  const t = a.arrival.getTime() - b.arrival.getTime();
  if (t !== 0) return t;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** No folder of a layout level fits the layout, while folders or data files are there. */
export interface LayoutMismatch {
  /** The layout's text. */
  layout: string;
  /** Index of the level no folder fits. */
  level: number;
  /** That level's template (`{HH}`, `dt={yyyy}-{mm}-{dd}`). */
  template: string;
  /** The folder that was listed (`` for the source root, `2026/11/30/`). */
  parent: string;
  /** A few of the folders found there (relative to the source root), and how many. */
  folders: string[];
  folderCount: number;
  /** A few of the data files found there instead, and how many. */
  files: string[];
  fileCount: number;
  /** When the folders stop above this level: a layout of the levels above it (`{yyyy}/{mm}/{dd}`). */
  shorterLayout: string | null;
  /** A template for this level that the folders found do fit (`{yyyy}`), when one is plain to see. */
  levelLooksLike: string | null;
}

/** What a survey found. */
export interface SourceSurvey {
  /** What the root is (`inspectRoot`); 'unknown' on stores without folders (S3). */
  root: RootKind | 'unknown';
  /** Nothing at all was listed at the root: a new landing zone, or the wrong prefix. */
  empty: boolean;
  /** The layout fits no folder while something else is there; null when it fits or nothing is there. */
  mismatch: LayoutMismatch | null;
  listRequests: number;
}
