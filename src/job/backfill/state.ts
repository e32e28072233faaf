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
 *
 * A sharded backfill (`--shard K/N`, ./shard.ts) keeps one state per shard, under its own domain
 * and appId `tidemark.backfill.<job>@shard-I-of-N` (I the 0-based index: `--shard 1/4` is
 * `@shard-0-of-4`), so shards commit side by side without
 * conflicting on state. Each shard's state names the whole range (`from`, `to`: what makes shards
 * part of one backfill), the split (`shard`) and its own slice (`part`); its cursor runs within
 * the slice. An unsharded backfill is the one shard of a 1-way split and keeps the plain domain.
 */
import type { Action } from '../../delta/actions.js';
import type { DiscoveredFile } from '../../discovery/index.js';
import type { Snapshot } from '../../delta/snapshot.js';
import { DeltaLogError } from '../../errors.js';
import type { LedgerState } from '../ledger.js';
import type { ClearedFile, QuarantinedFile } from '../quarantine.js';
import type { TombstoneState } from '../tombstones/plan.js';
import { WHOLE_RANGE, type Shard } from './shard.js';

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
  /** The split this state is one shard of (absent: not split, the whole range). */
  shard?: Shard;
  /** The shard's own slice of the range (null: the split left it nothing); absent when not split. */
  part?: { from: string; to: string } | null;
  /**
   * Which backfill of the job this is: each new backfill takes one more than the highest in the
   * table, and its shards share it. The highest is the job's current backfill (absent: 0).
   */
  generation?: number;
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
  /** Files the job (or another shard) had quarantined that this backfill loaded since (absent: none). */
  cleared?: ClearedFile[];
  /** Tombstone files of the backfill's deletes (merge mode); kept across ranges until they expire. */
  tombstones?: TombstoneState;
  /**
   * The backfill's ledger of the files it loaded (../ledger.ts), kept across ranges: a file a
   * backfill loaded first keeps that first load's place in the tie order when it loads again.
   */
  ledger?: LedgerState;
}

/** Domain and txn appId of a job's backfill, or of one shard of it (`@` cannot occur in a job name). */
export function backfillAppId(job: string, shard: Shard = WHOLE_RANGE): string {
  return shard.count === 1
    ? `tidemark.backfill.${job}`
    : `tidemark.backfill.${job}@shard-${shard.index}-of-${shard.count}`;
}

/** Folder name of the backfill's (or the shard's) tombstone files. */
export function backfillTombstoneFolder(job: string, shard: Shard = WHOLE_RANGE): string {
  return shard.count === 1
    ? `${job}@backfill`
    : `${job}@backfill-shard-${shard.index}-of-${shard.count}`;
}

/** The split a state belongs to (the whole range when it is not sharded). */
export function shardOf(state: Pick<BackfillState, 'shard'>): Shard {
  return state.shard ?? WHOLE_RANGE;
}

/** The state of the job's (unsharded) backfill, or of one shard, in a snapshot; null when it never committed. */
export function readBackfillState(
  snapshot: Snapshot | null,
  job: string,
  shard: Shard = WHOLE_RANGE,
): BackfillState | null {
  return readStateOf(snapshot, job, backfillAppId(job, shard));
}

/** Every backfill state of the job in a snapshot (the unsharded one and every shard's), by appId. */
export function readBackfillStates(
  snapshot: Snapshot | null,
  job: string,
): Map<string, BackfillState> {
  const states = new Map<string, BackfillState>();
  if (!snapshot) return states;
  const plain = backfillAppId(job);
  for (const domain of snapshot.domains.keys()) {
    if (domain !== plain && !domain.startsWith(`${plain}@shard-`)) continue;
    const state = readStateOf(snapshot, job, domain);
    if (state) states.set(domain, state);
  }
  return states;
}

function readStateOf(snapshot: Snapshot | null, job: string, appId: string): BackfillState | null {
  const domain = snapshot?.domains.get(appId);
  if (!snapshot || !domain) return null;
  const fail = (why: string, cause?: unknown) =>
    new DeltaLogError(
      `[backfill] state of the backfill of job ${job} in ${snapshot.tableUri} at version ${snapshot.version} ${why}`,
      {
        context: { uri: snapshot.tableUri, version: snapshot.version, job },
        ...(cause === undefined ? {} : { cause }),
      },
    );
  let raw: unknown;
  try {
    raw = JSON.parse(domain.configuration);
  } catch (cause) {
    throw fail('is not valid JSON', cause);
  }
  const s = raw as Partial<BackfillState> | null;
  if (typeof s !== 'object' || s === null) throw fail('is not an object');
  if (s.stateVersion !== BACKFILL_STATE_VERSION)
    throw fail(
      `has stateVersion ${String(s.stateVersion)}, this tidemark reads ${BACKFILL_STATE_VERSION}`,
    );
  if (!Array.isArray(s.loaded) || typeof s.from !== 'string' || typeof s.to !== 'string')
    throw fail('lacks its range or its loaded files');
  return s as BackfillState;
}

/**
 * The tombstones of the job's backfills (every shard's), for a MERGE to read; `except` leaves out
 * one owner's (a shard reads its own through its state).
 */
export function backfillTombstones(
  snapshot: Snapshot | null,
  job: string,
  except?: string,
): Array<{ folder: string; state: TombstoneState | undefined }> {
  const out: Array<{ folder: string; state: TombstoneState | undefined }> = [];
  for (const [appId, state] of readBackfillStates(snapshot, job)) {
    if (appId !== except && state.tombstones)
      out.push({ folder: backfillTombstoneFolder(job, shardOf(state)), state: state.tombstones });
  }
  return out;
}

/** The names of the jobs whose backfill states (any shard's) the snapshot holds. */
export function backfillJobs(snapshot: Snapshot | null): string[] {
  const prefix = backfillAppId('');
  const names = new Set<string>();
  for (const domain of snapshot?.domains.keys() ?? [])
    if (domain.startsWith(prefix)) names.add(domain.slice(prefix.length).split('@')[0]!);
  return [...names].sort();
}

/**
 * True for a file some backfill of the jobs may have loaded (it lies in a backfill's range: its
 * partition, or its LastModified, between the range's ends): in append mode the job's run looks it
 * up in the table before appending it, so a range loaded ahead of the watermark is not loaded twice.
 */
export function backfilledBy(
  snapshot: Snapshot | null,
  jobs: string | readonly string[],
): (file: DiscoveredFile) => boolean {
  const ranges = (typeof jobs === 'string' ? [jobs] : jobs)
    .flatMap((job) => [...readBackfillStates(snapshot, job).values()])
    .filter((s) => s.batch > 0);
  if (ranges.length === 0) return () => false;
  return (file) =>
    ranges.some((r) => {
      if (r.mode === 'partition')
        return file.partition !== undefined && r.from <= file.partition && file.partition <= r.to;
      const t = file.lastModified.getTime();
      return Date.parse(r.from) <= t && t <= Date.parse(r.to);
    });
}

/** The actions committing `state` with a backfill batch: its txn and its domain. */
export function backfillActions(state: BackfillState, now = Date.now()): Action[] {
  const appId = backfillAppId(state.job, shardOf(state));
  return [{ txn: { appId, version: state.batch, lastUpdated: now } }, backfillDomain(state)];
}

/** The domain action holding `state` (JSON), under the shard's appId. */
function backfillDomain(state: BackfillState): Action {
  return {
    domainMetadata: {
      domain: backfillAppId(state.job, shardOf(state)),
      configuration: JSON.stringify(state),
      removed: false,
    },
  };
}
