/**
 * What a backfill loads, and the state it commits after each batch.
 *
 *   listBackfill  partition mode: walk only the partition folders in [cursor, to] (src/discovery's
 *                 walk: folders are built level by level, never the whole landing zone);
 *                 modification-time mode: list the prefix, keep LastModified in [from, to]
 *   plan*         (pure) the files still to load, oldest first, in batches that never span two
 *                 partitions, so each partition ends with its own commit
 *   stateAfter    (pure) the backfill state to commit with a batch
 *
 * Files are taken whatever the job's own state says (a backfill reloads); only `_`/`.` files and,
 * with `requireSuccessMarker`, folders without `_SUCCESS` are left out.
 */
import type { JobConfig } from '../../config/schema.js';
import { listModified, type ModifiedListing } from '../../discovery/by-modified.js';
import { resolveDiscovery } from '../../discovery/config.js';
import type { DiscoveredFile } from '../../discovery/index.js';
import type { KeyFilter } from '../../discovery/filter.js';
import { folderOf, isNotData, SUCCESS_MARKER } from '../../discovery/identity.js';
import {
  walkPartitions,
  type PartitionWalk,
  type SkippedFolder,
} from '../../discovery/partitions.js';
import { compareFiles } from '../../discovery/plan.js';
import type { Storage } from '../../storage/storage.js';
import { splitBatches } from '../batches.js';
import { discoveryConfigOf } from '../open.js';
import { describeRange, type BackfillRange } from './range.js';
import type { BackfillEntry, BackfillState } from './state.js';
import { withQuarantined } from '../quarantine.js';
import { withCleared } from '../quarantine-list.js';
import type { QuarantinedFile } from '../quarantine.js';
import type { Shard } from './shard.js';

/** Files of one commit; never more than one partition's, unless whole partitions are grouped (`partitionsPerCommit`). */
export interface PlannedBatch {
  files: DiscoveredFile[];
  /** Partition id (partition mode), or null. */
  partition: string | null;
  /** True for the last batch of its partition (partition mode; always true in modified mode). */
  closesPartition: boolean;
}

/** Why a listed file is not loaded. */
export type BackfillSkipReason =
  | 'not data'
  | 'excluded'
  | 'no success marker'
  | 'already loaded by this backfill'
  | typeof UNCHANGED_UNPLACED;

/**
 * A file the job (or a backfill) loaded in this very content, at a time its ledger did not record
 * (ledger files written before tidemark kept it): loaded again it could not keep its place in the
 * tie order, so it is left out; its rows are in the table as they are (docs/concepts.md).
 */
export const UNCHANGED_UNPLACED = 'already loaded, unchanged' as const;

/**
 * `plan` without the files `unplaced` names (skipped as UNCHANGED_UNPLACED; pure). A batch left
 * empty is dropped; when it closed its partition, the partition's last batch left closes it (a
 * partition with nothing left is passed over: the next partition's close, or the last batch, moves
 * the cursor past it).
 */
export function withoutUnplaced(plan: BackfillPlan, unplaced: ReadonlySet<string>): BackfillPlan {
  if (unplaced.size === 0) return plan;
  const batches: PlannedBatch[] = [];
  for (const b of plan.batches) {
    const files = b.files.filter((f) => !unplaced.has(f.key));
    const prev = batches.at(-1);
    if (files.length > 0) batches.push({ ...b, files });
    else if (b.closesPartition && prev && b.partition !== null && prev.partition === b.partition)
      batches[batches.length - 1] = { ...prev, closesPartition: true };
  }
  const left = batches.flatMap((b) => b.files);
  const skipped = plan.batches.flatMap((b) => b.files).filter((f) => unplaced.has(f.key));
  return {
    ...plan,
    batches,
    files: left.length,
    bytes: left.reduce((n, f) => n + f.size, 0),
    skipped: [...plan.skipped, ...skipped.map((f) => ({ key: f.key, reason: UNCHANGED_UNPLACED }))],
  };
}

/** The rest of the range to load. */
export interface BackfillPlan {
  batches: PlannedBatch[];
  files: number;
  bytes: number;
  /** Partition folders found in the range still to do (partition mode), or prefixes listed. */
  partitionsListed: string[];
  skipped: Array<{ key: string; reason: BackfillSkipReason }>;
  /** Folders not matching the layout (or naming impossible dates) inside the range. */
  skippedFolders: SkippedFolder[];
  listRequests: number;
}

/** The cursor a plan starts from (see ./state.ts). */
export interface BackfillCursor {
  doneThrough: string | null;
  loaded: readonly BackfillEntry[];
}

/** Listing limits, and how many whole partitions one commit may take. */
export interface ListBackfillOptions {
  concurrency: number;
  signal?: AbortSignal;
  /** Consecutive partitions loaded in one commit, when they fit the batch limits (default 1). */
  partitionsPerCommit?: number;
}

/** List what the rest of the range needs and plan it (a null range, a shard's empty slice, needs nothing). */
export async function listBackfill(
  source: Storage,
  job: JobConfig,
  range: BackfillRange | null,
  cursor: BackfillCursor,
  opts: ListBackfillOptions,
): Promise<BackfillPlan> {
  if (range === null) return emptyPlan();
  // The job's own discovery settings: the same layout, clock and include/exclude as its runs.
  const settings = resolveDiscovery(discoveryConfigOf(job));
  const limits: PlanLimits = {
    maxFiles: job.maxFilesPerBatch,
    maxBytes: job.maxBytesPerBatch,
    requireSuccessMarker: settings.requireSuccessMarker,
    selects: settings.selects,
    partitionsPerCommit: opts.partitionsPerCommit ?? 1,
  };
  if (range.mode === 'partition') {
    if (settings.mode !== 'partition')
      throw new Error('[backfill] a partition range for a job discovering by modification time');
    const first =
      cursor.doneThrough === null ? range.from : settings.clock.step(cursor.doneThrough, 1);
    if (first > range.to) return emptyPlan();
    const walk = await walkPartitions(source, settings.layout, {
      from: first,
      until: () => range.to,
      concurrency: opts.concurrency,
      signal: opts.signal,
    });
    return planPartitionBackfill(walk, cursor, limits);
  }
  const listing = await listModified(source, {
    floor: range.from - 1,
    keepAll: settings.requireSuccessMarker,
    concurrency: opts.concurrency,
    signal: opts.signal,
  });
  return planModifiedBackfill(listing, range, cursor, limits);
}

/** Batch limits, the success-marker rule and the job's include/exclude filter. */
export interface PlanLimits {
  maxFiles: number;
  maxBytes: number;
  requireSuccessMarker: boolean;
  /** True for keys (relative to the source root) that `source.include`/`source.exclude` let through. */
  selects: KeyFilter;
  /** Consecutive whole partitions one batch may take (default 1: a commit per partition). */
  partitionsPerCommit?: number;
}

/** Plan the partitions of a walk (pure): every data file not yet loaded by this backfill. */
export function planPartitionBackfill(
  walk: PartitionWalk,
  cursor: BackfillCursor,
  limits: PlanLimits,
): BackfillPlan {
  const plan = emptyPlan();
  plan.listRequests = walk.listRequests;
  // Folders after `to` are outside the range, not worth a warning.
  plan.skippedFolders = walk.skippedFolders.filter(
    (f) => !f.reason.startsWith('after the current partition'),
  );
  const done = new Set(cursor.loaded.map((e) => `${e.etag}\u0000${e.key}`));
  for (const part of walk.partitions) {
    if (cursor.doneThrough !== null && part.id <= cursor.doneThrough) continue;
    plan.partitionsListed.push(part.prefix);
    const hasMarker = part.objects.some((o) => o.key === part.prefix + SUCCESS_MARKER);
    const files: DiscoveredFile[] = [];
    for (const o of part.objects) {
      const reason =
        skipReason(o.key, o.key.slice(part.prefix.length), hasMarker, limits) ??
        (done.has(`${o.etag}\u0000${o.key}`) ? 'already loaded by this backfill' : null);
      if (reason) plan.skipped.push({ key: o.key, reason });
      else files.push({ ...o, partition: part.id, arrival: o.lastModified });
    }
    files.sort(compareFiles);
    const batches = splitBatches(files, limits.maxFiles, limits.maxBytes);
    batches.forEach((b, i) =>
      plan.batches.push({
        files: b,
        partition: part.id,
        closesPartition: i === batches.length - 1,
      }),
    );
  }
  plan.batches = groupPartitions(plan.batches, limits);
  return withTotals(plan);
}

/**
 * Coarser commits (`partitionsPerCommit` > 1): consecutive partitions that each fit one batch are
 * loaded together while the group stays within the batch limits. A group's batch names its last
 * partition, so the cursor moves past the whole group; a partition split over several batches
 * is never grouped. Fewer commits per shard means less contention on the log (docs/scaling.md).
 */
function groupPartitions(batches: readonly PlannedBatch[], limits: PlanLimits): PlannedBatch[] {
  const most = limits.partitionsPerCommit ?? 1;
  if (most <= 1) return [...batches];
  interface Group {
    batch: PlannedBatch;
    partitions: number;
    bytes: number;
  }
  const out: PlannedBatch[] = [];
  let group: Group | null = null;
  for (const [i, b] of batches.entries()) {
    const whole = b.closesPartition && (i === 0 || batches[i - 1]!.closesPartition);
    const bytes = b.files.reduce((n, f) => n + f.size, 0);
    const fits =
      group !== null &&
      whole &&
      group.partitions < most &&
      group.batch.files.length + b.files.length <= limits.maxFiles &&
      group.bytes + bytes <= limits.maxBytes;
    if (group !== null && fits) {
      group = {
        batch: {
          files: [...group.batch.files, ...b.files],
          partition: b.partition,
          closesPartition: true,
        },
        partitions: group.partitions + 1,
        bytes: group.bytes + bytes,
      };
      continue;
    }
    if (group !== null) out.push(group.batch);
    group = null;
    if (whole) group = { batch: b, partitions: 1, bytes };
    else out.push(b);
  }
  if (group !== null) out.push(group.batch);
  return out;
}

/** Plan a listing by LastModified (pure): files in [from, to] after the cursor, oldest first. */
export function planModifiedBackfill(
  listing: ModifiedListing,
  range: Extract<BackfillRange, { mode: 'modified' }>,
  cursor: BackfillCursor,
  limits: PlanLimits,
): BackfillPlan {
  const plan = emptyPlan();
  plan.listRequests = listing.listRequests;
  plan.partitionsListed = listing.prefixesListed;
  plan.skippedFolders = listing.skippedFolders;
  const markers = new Set(
    listing.objects
      .filter((o) => o.key.slice(folderOf(o.key).length) === SUCCESS_MARKER)
      .map((o) => folderOf(o.key)),
  );
  const after = cursor.doneThrough === null ? null : Date.parse(cursor.doneThrough);
  const done = new Set(cursor.loaded.map((e) => `${e.etag}\u0000${e.key}`));
  const files: DiscoveredFile[] = [];
  for (const o of listing.objects) {
    const ms = o.lastModified.getTime();
    if (ms < range.from || ms > range.to || (after !== null && ms < after)) continue;
    const reason =
      skipReason(o.key, o.key, markers.has(folderOf(o.key)), limits) ??
      (done.has(`${o.etag}\u0000${o.key}`) ? 'already loaded by this backfill' : null);
    if (reason) plan.skipped.push({ key: o.key, reason });
    else files.push({ ...o, arrival: o.lastModified });
  }
  files.sort(compareFiles);
  plan.batches = splitBatches(files, limits.maxFiles, limits.maxBytes).map((b) => ({
    files: b,
    partition: null,
    closesPartition: true,
  }));
  return withTotals(plan);
}

/** Why a file is not loaded (`name`: its key below its partition folder, or the whole key). */
function skipReason(
  key: string,
  name: string,
  hasMarker: boolean,
  limits: PlanLimits,
): BackfillSkipReason | null {
  if (isNotData(name)) return 'not data';
  if (!limits.selects(key)) return 'excluded';
  if (limits.requireSuccessMarker && !hasMarker) return 'no success marker';
  return null;
}

function emptyPlan(): BackfillPlan {
  return {
    batches: [],
    files: 0,
    bytes: 0,
    partitionsListed: [],
    skipped: [],
    skippedFolders: [],
    listRequests: 0,
  };
}

function withTotals(plan: BackfillPlan): BackfillPlan {
  const all = plan.batches.flatMap((b) => b.files);
  return { ...plan, files: all.length, bytes: all.reduce((n, f) => n + f.size, 0) };
}

/**
 * A fresh state for `range` (of shard `part.shard`, loading `part.slice`; of backfill number
 * `generation`), keeping the txn version and tombstones of the state that held the same appId before.
 */
export function startState(
  job: string,
  range: BackfillRange,
  prev: BackfillState | null,
  now: Date,
  part?: ShardPart,
  generation = 0,
): BackfillState {
  return {
    stateVersion: 1,
    job,
    mode: range.mode,
    ...describeRange(range),
    ...(part && part.shard.count > 1
      ? { shard: part.shard, part: part.slice ? describeRange(part.slice) : null }
      : {}),
    ...(generation > 0 ? { generation } : {}),
    status: 'running',
    batch: prev?.batch ?? 0,
    doneThrough: null,
    loaded: [],
    startedAt: now.toISOString(),
    updatedAt: now.toISOString(),
    totals: { filesLoaded: 0, rowsLoaded: 0 },
    ...(prev?.tombstones ? { tombstones: prev.tombstones } : {}),
    ...(prev?.ledger ? { ledger: prev.ledger } : {}),
  };
}

/** One shard and its slice of the range (null: the split left it nothing). */
export interface ShardPart {
  shard: Shard;
  slice: BackfillRange | null;
}

/** Where the state's cursor ends once done: the end of its slice (or of the range when not split). */
function endOf(state: BackfillState): string | null {
  return state.part === undefined ? state.to : (state.part?.to ?? null);
}

/** What a batch loaded: its files (quarantined ones included: they are done too), rows, files set aside. */
export interface LoadedBatchFiles {
  files: readonly DiscoveredFile[];
  rowsRead: number;
  quarantined: readonly QuarantinedFile[];
  /** Files the other owners of the job's states have quarantined (../quarantine-list.ts). */
  quarantinedByOthers?: readonly QuarantinedFile[];
}

/**
 * The state to commit with `batch`. The last batch of the plan marks the range done; a
 * partition's last batch moves the cursor past the partition.
 */
export function stateAfter(
  prev: BackfillState,
  batch: PlannedBatch,
  done: LoadedBatchFiles,
  opts: { last: boolean; now: Date },
): BackfillState {
  const { files: loaded, rowsRead, quarantined } = done;
  // A file set aside earlier and loaded now leaves the list; one another owner set aside is cleared.
  const list = withQuarantined(prev.quarantined ?? [], quarantined, loaded);
  const setAside = new Set(quarantined.map((q) => q.key));
  const cleared = withCleared(
    prev.cleared,
    done.quarantinedByOthers ?? [],
    loaded.filter((f) => !setAside.has(f.key)),
    opts.now,
  );
  const base = {
    ...prev,
    batch: prev.batch + 1,
    updatedAt: opts.now.toISOString(),
    totals: {
      filesLoaded: prev.totals.filesLoaded + loaded.length - quarantined.length,
      rowsLoaded: prev.totals.rowsLoaded + rowsRead,
    },
    ...(list.length > 0 || prev.quarantined !== undefined ? { quarantined: list } : {}),
    ...(cleared ? { cleared } : {}),
  };
  if (opts.last) return { ...base, status: 'done', doneThrough: endOf(prev), loaded: [] };
  const entries = loaded.map((f) => ({ key: f.key, etag: f.etag }));
  if (batch.partition !== null) {
    return batch.closesPartition
      ? { ...base, doneThrough: batch.partition, loaded: [] }
      : { ...base, loaded: [...prev.loaded, ...entries] };
  }
  // By LastModified: the cursor is the newest time loaded; remember the files at exactly that time.
  const newest = loaded.reduce((max, f) => Math.max(max, f.lastModified.getTime()), -Infinity);
  const cursor = new Date(newest).toISOString();
  const atCursor = loaded
    .filter((f) => f.lastModified.getTime() === newest)
    .map((f) => ({ key: f.key, etag: f.etag }));
  return {
    ...base,
    doneThrough: cursor,
    loaded: [...(prev.doneThrough === cursor ? prev.loaded : []), ...atCursor],
  };
}

/** A state marking the range done without data (the rest of the range held nothing to load). */
export function doneState(prev: BackfillState, now: Date): BackfillState {
  return {
    ...prev,
    batch: prev.batch + 1,
    status: 'done',
    doneThrough: endOf(prev),
    loaded: [],
    updatedAt: now.toISOString(),
  };
}
