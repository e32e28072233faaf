/**
 * Partition discovery, the pure part: from a walk of the partition folders and the
 * previous state to a plan and the next state.
 *
 * Watermark: the newest partition loaded from. A run scans from `lookback` partitions
 * before the watermark up to the store clock's current partition, so the open partition
 * (today, this hour) stays in reach while files keep arriving: it is the watermark
 * partition itself until a newer partition gets files. The state remembers key+ETag of
 * the files loaded in the scanned partitions, so a rescan loads only what is new there.
 *
 * Late check: the state remembers the files of `lateCheck` more partitions behind the window,
 * and a run lists those too, loading nothing from them: a file that landed there after its
 * partition left the window (or an overwrite there) is reported by name as skipped, never
 * passed over in silence. A larger `lookback` then loads it, and nothing twice.
 */
import type { PartitionSettings } from './config.js';
import { folderOf, isNotData, judgeFile, SUCCESS_MARKER } from './identity.js';
import type { PartitionWalk } from './partitions.js';
import {
  compareFiles,
  type Decision,
  type DecisionReason,
  type DiscoveredFile,
  type DiscoveryPlan,
  type StateBasis,
  type WaitingPartition,
} from './plan.js';
import type { PartitionEntry, PartitionState } from './state.js';
import { PartitionClock } from './zone.js';

/** First partition a run scans: `lookback` before the watermark, or `start`, or null (the oldest). */
export function scanFrom(settings: PartitionSettings, state: PartitionState | null): string | null {
  if (state === null) return settings.start;
  const back = settings.clock.step(state.watermark, -settings.lookback);
  // Never below what the state remembers in full: those files would load twice.
  return back > state.rememberedFrom ? back : state.rememberedFrom;
}

/**
 * First partition a run lists: `lateCheck` partitions before `scanFrom`, but never below what
 * the state remembers (an unremembered file there may have loaded long ago). Null: the oldest.
 */
export function listFrom(settings: PartitionSettings, state: PartitionState | null): string | null {
  const from = scanFrom(settings, state);
  if (state === null || from === null || settings.lateCheck === 0) return from;
  const back = settings.clock.step(state.watermark, -(settings.lookback + settings.lateCheck));
  const floor = back > state.rememberedFrom ? back : state.rememberedFrom;
  return floor < from ? floor : from;
}

/** Plan a run from a walk of the partition folders (pure). */
export function planPartitions(
  walk: PartitionWalk,
  settings: PartitionSettings,
  state: PartitionState | null,
): DiscoveryPlan {
  const from = scanFrom(settings, state);
  const checkedFrom = listFrom(settings, state);
  const until = settings.clock.partitionOf(walk.serverTime, settings.layout.granularity);
  const remembered = new Map((state?.loaded ?? []).map((e) => [e.key, e.etag]));
  const decisions: Decision[] = walk.strayObjects.map((o) => ({
    key: o.key,
    action: 'skip',
    reason: isNotData(o.key.slice(folderOf(o.key).length))
      ? 'not data'
      : settings.selects(o.key)
        ? 'not in a partition folder'
        : 'excluded',
  }));
  const files: DiscoveredFile[] = [];
  const ignored: DiscoveredFile[] = [];
  const waiting: WaitingPartition[] = [];
  const partitionsListed: string[] = [];
  let olderThanWindow = 0;
  for (const part of walk.partitions) {
    if (checkedFrom !== null && from !== null && part.id >= checkedFrom && part.id < from) {
      partitionsListed.push(part.prefix);
      for (const o of part.objects) {
        const reason = behindWindow(o.key, part.prefix, remembered.get(o.key), o.etag, settings);
        if (reason !== null)
          decisions.push({ key: o.key, action: 'skip', reason, partition: part.id });
      }
      continue;
    }
    // A walk only returns partitions in range; a hand-made listing may hold more.
    if ((from !== null && part.id < from) || part.id > until) {
      olderThanWindow += part.id < (from ?? '') ? part.objects.length : 0;
      continue;
    }
    partitionsListed.push(part.prefix);
    const hasMarker = part.objects.some((o) => o.key === part.prefix + SUCCESS_MARKER);
    const held: { lastModified: Date; size: number }[] = [];
    for (const o of part.objects) {
      const decision = decide(
        o.key,
        part.prefix,
        remembered.get(o.key),
        o.etag,
        hasMarker,
        settings,
      );
      decisions.push({ key: o.key, ...decision, partition: part.id });
      const file = { ...o, partition: part.id, arrival: o.lastModified };
      if (decision.action === 'load')
        files.push(
          decision.reason === 'overwritten, reloading'
            ? { ...file, loadedBefore: true as const }
            : file,
        );
      else if (decision.reason === 'overwritten, ignored') ignored.push(file);
      else if (decision.reason === 'no success marker') held.push(o);
    }
    if (held.length > 0) {
      const since = new Date(Math.min(...held.map((o) => o.lastModified.getTime())));
      waiting.push({
        partition: part.id,
        prefix: part.prefix,
        files: held.length,
        bytes: held.reduce((n, o) => n + o.size, 0),
        since,
      });
    }
  }
  files.sort(compareFiles);
  // Never past a partition still waiting for its marker: the next runs scan it until it loads.
  const basis: StateBasis = {
    mode: 'partition',
    lookback: settings.lookback,
    lateCheck: settings.lateCheck,
    timezone: settings.clock.zone,
    ...(waiting[0] ? { waitingFrom: waiting[0].partition } : {}),
  };
  return {
    mode: 'partition',
    files,
    decisions,
    olderThanWindow,
    partitionsListed,
    skippedFolders: walk.skippedFolders,
    window: {
      mode: 'partition',
      from,
      until,
      ...(checkedFrom !== null && checkedFrom !== from ? { checkedFrom } : {}),
    },
    serverTime: walk.serverTime,
    listRequests: walk.listRequests,
    onOverwrite: settings.onOverwrite,
    prevState: state,
    nextState: partitionStateAfter(state, basis, files, from),
    basis,
    // The remembered entry of the version loaded earlier stays as long as the partition is
    // in range, so an ignored overwrite needs no entry of its own.
    overwrittenIgnored: ignored,
    behindWindow: [],
    waiting,
  };
}

/**
 * A file in a partition behind the lookback window: null when it loaded before (or is no data
 * file, or is left out by the config), else why it is reported. An overwrite there is reported
 * only under `onOverwrite: reload` (under `ignore` it would not load inside the window either).
 */
function behindWindow(
  key: string,
  partitionPrefix: string,
  rememberedEtag: string | undefined,
  etag: string,
  settings: PartitionSettings,
): DecisionReason | null {
  if (
    isNotData(key.slice(partitionPrefix.length)) ||
    !settings.selects(key) ||
    rememberedEtag === etag
  )
    return null;
  if (rememberedEtag === undefined) return 'late, behind the lookback window';
  return settings.onOverwrite === 'reload' ? 'overwritten behind the lookback window' : null;
}

function decide(
  key: string,
  partitionPrefix: string,
  rememberedEtag: string | undefined,
  etag: string,
  hasMarker: boolean,
  settings: PartitionSettings,
): Pick<Decision, 'action' | 'reason'> {
  // Not data is judged below the partition folder (whose name may start with `_`); globs see the whole key.
  if (isNotData(key.slice(partitionPrefix.length))) return { action: 'skip', reason: 'not data' };
  if (!settings.selects(key)) return { action: 'skip', reason: 'excluded' };
  if (rememberedEtag === etag) return { action: 'skip', reason: 'already loaded' };
  if (settings.requireSuccessMarker && !hasMarker)
    return { action: 'skip', reason: 'no success marker' };
  return judgeFile(rememberedEtag, etag, settings.onOverwrite);
}

/**
 * The state after loading `loaded` (files of a plan, any prefix of `plan.files`) on top of
 * `prev`, for a plan that scanned from `scannedFrom`. Folding batches one after another gives
 * the same state as folding them at once.
 */
export function partitionStateAfter(
  prev: PartitionState | null,
  basis: Extract<StateBasis, { mode: 'partition' }>,
  loaded: readonly DiscoveredFile[],
  scannedFrom: string | null,
): PartitionState | null {
  if (loaded.length === 0) return prev;
  const clock = new PartitionClock(basis.timezone);
  let watermark = prev?.watermark ?? '';
  for (const f of loaded) {
    if (f.partition === undefined) throw new Error(`[discovery] file ${f.key} has no partition`);
    if (f.partition > watermark) watermark = f.partition;
  }
  // Files loaded while a partition waited lie after the watermark: once it loads, the watermark
  // moves on to the newest partition loaded, theirs included.
  for (const e of prev?.loaded ?? []) if (e.partition > watermark) watermark = e.partition;
  if (basis.waitingFrom !== undefined) {
    // Stop before the oldest partition waiting for its marker (never moving back): the files
    // loaded after it stay remembered, so they do not load again while it waits.
    const before = clock.step(basis.waitingFrom, -1);
    if (watermark > before)
      watermark = prev !== null && prev.watermark > before ? prev.watermark : before;
  }
  // The state remembers `lateCheck` partitions more than a run rescans: runs list them to report late files.
  const floor = clock.step(watermark, -(basis.lookback + basis.lateCheck));
  // Nothing below the first scanned partition was ever looked at (a first run from `start`),
  // so the state cannot claim to remember it: a later rescan would load files before `start`.
  const knownFrom = prev?.rememberedFrom ?? scannedFrom ?? floor;
  const rememberedFrom = knownFrom > floor ? knownFrom : floor;
  const byKey = new Map<string, PartitionEntry>();
  for (const e of prev?.loaded ?? []) byKey.set(e.key, e);
  for (const f of loaded) byKey.set(f.key, { key: f.key, etag: f.etag, partition: f.partition! });
  const kept = [...byKey.values()].filter((e) => e.partition >= rememberedFrom);
  kept.sort((a, b) =>
    a.partition !== b.partition
      ? a.partition < b.partition
        ? -1
        : 1
      : a.key < b.key
        ? -1
        : a.key > b.key
          ? 1
          : 0,
  );
  return { stateVersion: 1, mode: 'partition', watermark, rememberedFrom, loaded: kept };
}
