/**
 * A backfill's progress lives in the target table next to the job's state, but apart from it:
 * domain and txn appId `tidemark.backfill.<job>`, committed with each backfill batch. The job's
 * own domain and appId (`tidemark.job.<job>`, ./state.ts) are never written by a backfill, so its
 * watermark does not move, and the two may commit concurrently without conflicting on state.
 *
 * The cursor says how far the range is loaded:
 * - partition mode: `doneThrough` is the last partition loaded in full; `loaded` lists the files
 *   already loaded from the partition after it (a partition split over several batches);
 * - modification-time mode: `doneThrough` is the LastModified (ISO) of the last file loaded, in
 *   (LastModified, key) order; `loaded` lists the files loaded with exactly that LastModified.
 * So `loaded` stays as small as one partition (or one timestamp), whatever the range.
 */
import type { Action } from '../../delta/actions.js';
import type { Snapshot } from '../../delta/snapshot.js';
import { DeltaLogError } from '../../errors.js';
import type { QuarantinedFile } from '../quarantine.js';
import type { TombstoneState } from '../tombstones/plan.js';

/** Version of the layout below; `readBackfillState` refuses others. */
export const BACKFILL_STATE_VERSION = 1;

/** A file loaded at the cursor. */
export interface BackfillEntry {
  key: string;
  etag: string;
}

/** The committed progress of a job's backfill (the latest one). */
export interface BackfillState {
  stateVersion: number;
  job: string;
  mode: 'partition' | 'modified';
  /** The range, normalised: partition ids, or ISO timestamps (both ends included). */
  from: string;
  to: string;
  /** `done` once every file of the range is loaded. */
  status: 'running' | 'done';
  /** Commits made by the job's backfills so far; also the `txn` version. */
  batch: number;
  /** The cursor: see the module comment; null before the first commit of the range. */
  doneThrough: string | null;
  loaded: BackfillEntry[];
  startedAt: string;
  updatedAt: string;
  totals: { filesLoaded: number; rowsLoaded: number };
  /** Files of the range set aside by `onBadFile: quarantine` (absent: none). */
  quarantined?: QuarantinedFile[];
  /** Tombstone files of the backfill's deletes (merge mode); kept across ranges until they expire. */
  tombstones?: TombstoneState;
}

/** Domain and txn appId of a job's backfill. */
export function backfillAppId(job: string): string {
  return `tidemark.backfill.${job}`;
}

/** Folder name of the backfill's tombstone files (`@` cannot occur in a job name). */
export function backfillTombstoneFolder(job: string): string {
  return `${job}@backfill`;
}

/** The backfill state in a snapshot, or null when no backfill of the job ever committed. */
export function readBackfillState(snapshot: Snapshot | null, job: string): BackfillState | null {
  const domain = snapshot?.domains.get(backfillAppId(job));
  if (!snapshot || !domain) return null;
  const fail = (why: string, cause?: unknown) =>
    new DeltaLogError(`[backfill] state of the backfill of job ${job} in ${snapshot.tableUri} at version ${snapshot.version} ${why}`, {
      context: { uri: snapshot.tableUri, version: snapshot.version, job },
      ...(cause === undefined ? {} : { cause }),
    });
  let raw: unknown;
  try {
    raw = JSON.parse(domain.configuration);
  } catch (cause) {
    throw fail('is not valid JSON', cause);
  }
  const s = raw as Partial<BackfillState> | null;
  if (typeof s !== 'object' || s === null) throw fail('is not an object');
  if (s.stateVersion !== BACKFILL_STATE_VERSION) throw fail(`has stateVersion ${String(s.stateVersion)}, this tidemark reads ${BACKFILL_STATE_VERSION}`);
  if (!Array.isArray(s.loaded) || typeof s.from !== 'string' || typeof s.to !== 'string') throw fail('lacks its range or its loaded files');
  return s as BackfillState;
}

/** The tombstones of the job's backfill, for the job's MERGE to read (none when it has none). */
export function backfillTombstones(snapshot: Snapshot | null, job: string): Array<{ folder: string; state: TombstoneState | undefined }> {
  const tombstones = readBackfillState(snapshot, job)?.tombstones;
  return tombstones ? [{ folder: backfillTombstoneFolder(job), state: tombstones }] : [];
}

/** The actions committing `state` with a backfill batch. */
export function backfillActions(state: BackfillState, now = Date.now()): Action[] {
  const appId = backfillAppId(state.job);
  return [
    { txn: { appId, version: state.batch, lastUpdated: now } },
    { domainMetadata: { domain: appId, configuration: JSON.stringify(state), removed: false } },
  ];
}
