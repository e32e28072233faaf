/**
 * Modification-time discovery: files anywhere below the source prefix, selected by
 * LastModified against a watermark with a settle window.
 *
 * LastModified ties at second precision, and a multipart upload carries its *start* time,
 * so `LastModified > watermark` alone misses files. Each run therefore re-lists an overlap
 * of `settle` below the watermark: candidates are files with LastModified > watermark -
 * settle, and the state remembers key+ETag of every loaded file in that overlap, so a
 * candidate already loaded is skipped. A file is loaded exactly once as long as it becomes
 * visible within `settle` of its LastModified (uploads shorter than the settle window).
 *
 * Watermark: the newest LastModified loaded, capped at the store clock (the `Date` of the
 * first listing response), so a file stamped in the future by a skewed clock cannot push
 * the window past files still arriving.
 */
import pLimit from 'p-limit';
import { compareKeys } from '../storage/driver-helpers.js';
import { identifyObjects, type ObjectInfo, type Storage } from '../storage/storage.js';
import type { ModifiedSettings } from './config.js';
import { folderOf, isNotData, judgeFile, SUCCESS_MARKER } from './identity.js';
import type { SkippedFolder } from './partitions.js';
import {
  compareFiles,
  type Decision,
  type DecisionReason,
  type DiscoveredFile,
  type DiscoveryPlan,
  type StateBasis,
} from './plan.js';
import type { ModifiedEntry, ModifiedState } from './state.js';

/** A listing of the source prefix. */
export interface ModifiedListing {
  /** Objects that may matter: everything newer than the window floor, and success markers. */
  objects: ObjectInfo[];
  /** Objects dropped while listing because they are older than the window. */
  olderThanWindow: number;
  /** Of those, the ones `ListModifiedOptions.behindAfter` asks to keep (absent: none kept). */
  older?: ObjectInfo[];
  /** Prefixes listed in full. */
  prefixesListed: string[];
  skippedFolders: SkippedFolder[];
  serverTime: Date;
  listRequests: number;
  /** The newest key (byte order) of the objects older than the window (only with `startAfter` set in the options). */
  newestOlderKey?: string;
}

/** Options of `listModified`. */
export interface ListModifiedOptions {
  /** Objects with LastModified <= floor are only counted (unless they may be needed as markers). Null keeps all. */
  floor: number | null;
  /** Keep every object (the success-marker rule can lift an old file into the window). */
  keepAll: boolean;
  /**
   * Keep the objects older than the window with LastModified after this (epoch ms; null: all) in
   * `older`, to be checked against the files the job loaded (files that arrived with an old time).
   */
  behindAfter?: number | null;
  concurrency: number;
  signal?: AbortSignal;
  /**
   * List by the cheaper ETags a driver may give (`ListOptions.deferContentEtags`): the caller
   * identifies the objects it keeps (`identifyCandidates`).
   */
  deferContentEtags?: boolean;
  /**
   * Incremental listing (keys sort by time): one listing of every key after this one (null:
   * from the start), in key order, instead of a listing per first-level prefix in parallel.
   */
  startAfter?: string | null;
  /**
   * With `startAfter`: keys listed on their own when they sort at or before it (the job's
   * quarantined files: fixed by an overwrite in place, one keeps its key and must load again).
   */
  revisitKeys?: readonly string[];
}

/**
 * How far below the watermark a run re-lists (ms): `settle`, and never less than 1 ms, so the
 * watermark's own instant stays in the window. Under `settle: 0s` the files tied with the newest
 * one loaded that a batch boundary left to a later batch (a crash between them) load on the rerun.
 */
export function overlapMs(settleMs: number): number {
  return Math.max(settleMs, 1);
}

/**
 * Lower bound of the candidates: LastModified must be greater than this (epoch ms), or null for
 * all. Never below what the state remembers in full: a wider `settle` would reload those files.
 */
export function windowFloor(
  settings: ModifiedSettings,
  state: ModifiedState | null,
): number | null {
  if (state !== null)
    return Math.max(
      state.watermark - overlapMs(settings.settleMs),
      state.rememberedAfter ?? -Infinity,
    );
  return settings.start === null ? null : settings.start - 1; // `start` itself is included
}

/**
 * List the whole source prefix: the first level with delimiter `/` once, then every
 * first-level prefix recursively, in parallel. Folders starting with `_` or `.` are skipped.
 */
export async function listModified(
  storage: Storage,
  opts: ListModifiedOptions,
): Promise<ModifiedListing> {
  const limit = pLimit(opts.concurrency);
  const listing: ModifiedListing = {
    objects: [],
    olderThanWindow: 0,
    prefixesListed: [],
    skippedFolders: [],
    serverTime: new Date(NaN),
    listRequests: 0,
  };
  const behind = opts.behindAfter;
  if (behind !== undefined) listing.older = [];
  const keep = (o: ObjectInfo) => {
    const ms = o.lastModified.getTime();
    const wanted = opts.keepAll || opts.floor === null || ms > opts.floor;
    if (wanted) listing.objects.push(o);
    else {
      listing.olderThanWindow++;
      if (
        opts.startAfter !== undefined &&
        (listing.newestOlderKey === undefined || compareKeys(o.key, listing.newestOlderKey) > 0)
      )
        listing.newestOlderKey = o.key;
      if (behind !== undefined && (behind === null || ms > behind)) listing.older!.push(o);
    }
  };
  if (opts.startAfter !== undefined) return listIncrementally(storage, opts, listing, keep);
  const defer = opts.deferContentEtags ? { deferContentEtags: true } : {};
  let prefixes: string[] = [];
  for await (const page of storage.list({ delimiter: '/', ...defer, signal: opts.signal })) {
    listing.listRequests++;
    if (Number.isNaN(listing.serverTime.getTime())) listing.serverTime = page.serverTime;
    page.objects.forEach(keep);
    prefixes.push(...page.commonPrefixes);
  }
  prefixes = prefixes.filter((p) => {
    const hidden = p.startsWith('_') || p.startsWith('.');
    if (hidden)
      listing.skippedFolders.push({ prefix: p, reason: 'not data (name starts with _ or .)' });
    return !hidden;
  });
  await Promise.all(
    prefixes.map((prefix) =>
      limit(async () => {
        for await (const page of storage.list({ prefix, ...defer, signal: opts.signal })) {
          listing.listRequests++;
          page.objects.forEach(keep);
        }
      }),
    ),
  );
  listing.prefixesListed = prefixes;
  return listing;
}

/** One listing of every key after `opts.startAfter`, in order; folders starting with `_` or `.` at the top are skipped (named once). */
async function listIncrementally(
  storage: Storage,
  opts: ListModifiedOptions,
  listing: ModifiedListing,
  keep: (o: ObjectInfo) => void,
): Promise<ModifiedListing> {
  const hidden = new Set<string>();
  const listed = new Set<string>();
  const startAfter = opts.startAfter ?? undefined;
  const defer = opts.deferContentEtags ? { deferContentEtags: true } : {};
  for await (const page of storage.list({
    ...(startAfter !== undefined ? { startAfter } : {}),
    ...defer,
    signal: opts.signal,
  })) {
    listing.listRequests++;
    if (Number.isNaN(listing.serverTime.getTime())) listing.serverTime = page.serverTime;
    for (const o of page.objects) {
      const cut = o.key.indexOf('/');
      const top = cut < 0 ? null : o.key.slice(0, cut + 1);
      if (top !== null && (top.startsWith('_') || top.startsWith('.'))) {
        hidden.add(top);
        continue;
      }
      if (top !== null) listed.add(top);
      keep(o);
    }
  }
  for (const key of opts.revisitKeys ?? []) {
    if (startAfter === undefined || compareKeys(key, startAfter) > 0) continue; // listed above
    for await (const page of storage.list({ prefix: key, ...defer, signal: opts.signal })) {
      listing.listRequests++;
      for (const o of page.objects) if (o.key === key) keep(o);
    }
  }
  listing.skippedFolders = [...hidden].map((prefix) => ({
    prefix,
    reason: 'not data (name starts with _ or .)',
  }));
  listing.prefixesListed = [...listed];
  return listing;
}

/**
 * A listing made with `deferContentEtags` whose candidates (the data files the window takes, the
 * ones `planModified` decides on and keeps) carry the ETags a plain listing gives: the state and
 * the ledger remember those. The files behind the window keep the listing's ETags (the ledger's
 * check identifies those it compares).
 */
export async function identifyCandidates(
  storage: Storage,
  listing: ModifiedListing,
  settings: ModifiedSettings,
  state: ModifiedState | null,
  signal?: AbortSignal,
): Promise<ModifiedListing> {
  if (!storage.identify) return listing;
  const inWindow = windowTest(windowFloor(settings, state));
  const markers = markerTimes(listing.objects);
  const at: number[] = [];
  listing.objects.forEach((o, i) => {
    if (!isNotData(o.key) && settings.selects(o.key) && inWindow(arrivalOf(o, markers, settings)))
      at.push(i);
  });
  const identified = await identifyObjects(
    storage,
    at.map((i) => listing.objects[i]!),
    signal ? { signal } : {},
  );
  const objects = [...listing.objects];
  at.forEach((i, n) => (objects[i] = identified[n]!));
  return { ...listing, objects };
}

function windowTest(floor: number | null): (ms: number) => boolean {
  return (ms) => floor === null || ms > floor;
}

/** When a file arrived: its LastModified, or its folder's success marker's when one is required and newer. */
function arrivalOf(
  o: ObjectInfo,
  markers: ReadonlyMap<string, number>,
  settings: ModifiedSettings,
): number {
  const own = o.lastModified.getTime();
  const marker = markers.get(folderOf(o.key));
  return settings.requireSuccessMarker && marker !== undefined ? Math.max(own, marker) : own;
}

/** Plan a run from a listing of the source prefix (pure). */
export function planModified(
  listing: ModifiedListing,
  settings: ModifiedSettings,
  state: ModifiedState | null,
): DiscoveryPlan {
  const floor = windowFloor(settings, state);
  const remembered = new Map((state?.loaded ?? []).map((e) => [e.key, e]));
  const markers = markerTimes(listing.objects);
  const inWindow = windowTest(floor);
  const decisions: Decision[] = [];
  const files: DiscoveredFile[] = [];
  const ignored: DiscoveredFile[] = [];
  const behindWindow: DiscoveredFile[] = [];
  // Data files the window passed over: the job layer checks them against what it loaded.
  const passedOver = (o: ObjectInfo, arrival: number) => {
    if (!isNotData(o.key) && settings.selects(o.key))
      behindWindow.push({ ...o, arrival: new Date(arrival) });
  };
  for (const o of listing.older ?? []) passedOver(o, o.lastModified.getTime());
  let olderThanWindow = listing.olderThanWindow;
  for (const o of listing.objects) {
    const marker = markers.get(folderOf(o.key));
    const arrival = arrivalOf(o, markers, settings);
    if (!inWindow(arrival)) {
      olderThanWindow++;
      if (listing.older !== undefined) passedOver(o, arrival);
      continue;
    }
    const decision = decide(o, remembered.get(o.key), marker !== undefined, settings);
    decisions.push({ key: o.key, ...decision });
    const file = { ...o, arrival: new Date(arrival) };
    if (decision.action === 'load')
      files.push(
        decision.reason === 'overwritten, reloading'
          ? { ...file, loadedBefore: true as const }
          : file,
      );
    else if (decision.reason === 'overwritten, ignored') ignored.push(file);
  }
  files.sort(compareFiles);
  const listAfter = settings.incrementalListing
    ? safeListAfter(state?.listAfter, newerKey(state?.listAfter, listing.newestOlderKey), files)
    : undefined;
  const basis: StateBasis = {
    mode: 'modified',
    settleMs: settings.settleMs,
    serverTime: listing.serverTime.getTime(),
    scannedAfter: floor,
    ...(listAfter !== undefined ? { listAfter } : {}),
  };
  return {
    mode: 'modified',
    files,
    decisions,
    olderThanWindow,
    partitionsListed: listing.prefixesListed,
    skippedFolders: listing.skippedFolders,
    window: { mode: 'modified', after: floor === null ? null : new Date(floor) },
    serverTime: listing.serverTime,
    listRequests: listing.listRequests,
    onOverwrite: settings.onOverwrite,
    prevState: state,
    nextState: modifiedStateAfter(state, basis, files, ignored),
    basis,
    overwrittenIgnored: ignored,
    behindWindow,
    // A folder's files wait for its marker by their arrival (the marker's time): nothing holds the watermark.
    waiting: [],
  };
}

/**
 * The `listAfter` the plan's commits may record: `advanced` unless a file the plan loads sorts at or
 * before it (keys may disagree with LastModified within `settle`), else the one the listing started
 * from. Each batch commits it, so a run stopped before that file's batch would never list it again.
 */
function safeListAfter(
  prev: string | undefined,
  advanced: string | undefined,
  files: readonly DiscoveredFile[],
): string | undefined {
  if (advanced === undefined || advanced === prev) return advanced;
  return files.some((f) => compareKeys(f.key, advanced) <= 0) ? prev : advanced;
}

function newerKey(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  return b === undefined || compareKeys(a, b) >= 0 ? a : b;
}

function decide(
  o: ObjectInfo,
  known: ModifiedEntry | undefined,
  hasMarker: boolean,
  settings: ModifiedSettings,
): Pick<Decision, 'action' | 'reason'> {
  if (isNotData(o.key)) return { action: 'skip', reason: 'not data' };
  if (!settings.selects(o.key)) return { action: 'skip', reason: 'excluded' };
  if (known?.etag === o.etag)
    return { action: 'skip', reason: known.ignored ? 'overwritten, ignored' : 'already loaded' };
  if (settings.requireSuccessMarker && !hasMarker)
    return { action: 'skip', reason: 'no success marker' };
  return judgeFile(known?.etag, o.etag, settings.onOverwrite);
}

/** Newest `_SUCCESS` LastModified per folder (folder keys end with `/`, or are `` at the root). */
function markerTimes(objects: readonly ObjectInfo[]): Map<string, number> {
  const times = new Map<string, number>();
  for (const o of objects) {
    const folder = folderOf(o.key);
    if (o.key.slice(folder.length) !== SUCCESS_MARKER) continue;
    times.set(folder, Math.max(times.get(folder) ?? -Infinity, o.lastModified.getTime()));
  }
  return times;
}

/**
 * The state after loading `loaded` (any prefix of a plan's files) on top of `prev`.
 * Folding batches one after another gives the same state as folding them at once.
 */
export function modifiedStateAfter(
  prev: ModifiedState | null,
  basis: Extract<StateBasis, { mode: 'modified' }>,
  loaded: readonly DiscoveredFile[],
  ignored: readonly DiscoveredFile[] = [],
): ModifiedState | null {
  if (loaded.length === 0) return prev;
  const newest = loaded.reduce((max, f) => Math.max(max, f.arrival.getTime()), -Infinity);
  const watermark = Math.max(prev?.watermark ?? -Infinity, Math.min(newest, basis.serverTime));
  // The state remembers in full only what some run listed: not below a first run's `start`.
  const knownAfter =
    prev === null
      ? basis.scannedAfter
      : (prev.rememberedAfter ?? prev.watermark - overlapMs(basis.settleMs));
  const floor = Math.max(watermark - overlapMs(basis.settleMs), knownAfter ?? -Infinity);
  const byKey = new Map<string, ModifiedEntry>();
  for (const e of prev?.loaded ?? []) byKey.set(e.key, e);
  // An ignored overwrite is remembered by its new ETag and time: the entry of the version
  // loaded earlier may leave the window before the new version does.
  for (const f of ignored)
    byKey.set(f.key, {
      key: f.key,
      etag: f.etag,
      lastModified: f.arrival.getTime(),
      ignored: true,
    });
  for (const f of loaded)
    byKey.set(f.key, { key: f.key, etag: f.etag, lastModified: f.arrival.getTime() });
  // Entries at or below the floor can never be candidates again: the floor only rises.
  const kept = [...byKey.values()].filter((e) => e.lastModified > floor);
  kept.sort(
    (a, b) => a.lastModified - b.lastModified || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
  const listAfter = basis.listAfter ?? prev?.listAfter;
  return {
    stateVersion: 1,
    mode: 'modified',
    watermark,
    rememberedAfter: floor,
    loaded: kept,
    ...(listAfter !== undefined ? { listAfter } : {}),
  };
}

/**
 * A plan whose files taken for new are checked against the files the job loaded before they left
 * the settle window (`known`: key -> the ETag last loaded, from the job's ledger; pure): the same
 * ETag is already loaded and skipped; another is an overwrite, reloaded (the table may hold the
 * earlier version) or skipped as `onOverwrite` says. A touch or a copy in place long after a file
 * loaded is so never taken for a new file. `null`: loaded before a reset moved the watermark
 * before it, so loaded again (as a file the table may hold an earlier version of).
 */
export function withKnownFiles(
  plan: DiscoveryPlan,
  known: ReadonlyMap<string, string | null>,
): DiscoveryPlan {
  if (plan.basis.mode !== 'modified' || known.size === 0) return plan;
  const decisions: Decision[] = [];
  const files: DiscoveredFile[] = [];
  const ignored = [...plan.overwrittenIgnored];
  const byKey = new Map(plan.files.map((f) => [f.key, f]));
  for (const d of plan.decisions) {
    const etag = d.action === 'load' && d.reason === 'new' ? known.get(d.key) : undefined;
    const file = byKey.get(d.key);
    if (etag === undefined || !file) {
      decisions.push(d);
      if (d.action === 'load' && file) files.push(file);
      continue;
    }
    const judged: Pick<Decision, 'action' | 'reason'> =
      etag === null
        ? { action: 'load', reason: 'reloading after a reset' }
        : judgeFile(etag, file.etag, plan.onOverwrite);
    decisions.push({ ...d, ...judged });
    if (judged.action === 'load') files.push({ ...file, loadedBefore: true as const });
    else if (judged.reason === 'overwritten, ignored') ignored.push(file);
  }
  files.sort(compareFiles);
  return {
    ...plan,
    decisions,
    files,
    overwrittenIgnored: ignored,
    nextState: modifiedStateAfter(
      plan.prevState as ModifiedState | null,
      plan.basis,
      files,
      ignored,
    ),
  };
}

/** A file of `plan.behindWindow` the job never loaded, or loaded in another version. */
export interface PassedOver {
  key: string;
  reason: Extract<
    DecisionReason,
    'late, behind the settle window' | 'overwritten behind the settle window'
  >;
}

/**
 * A plan that names the files behind the window the job did not load (pure): skip decisions with
 * their reason, so the dry run lists them and a run counts and names them. Nothing else changes.
 */
export function withPassedOver(plan: DiscoveryPlan, found: readonly PassedOver[]): DiscoveryPlan {
  if (found.length === 0) return plan;
  return {
    ...plan,
    decisions: [
      ...plan.decisions,
      ...found.map((f) => ({ key: f.key, action: 'skip' as const, reason: f.reason })),
    ],
  };
}
