/**
 * The entry point of discovery: list the source (never download), plan the run, and fold
 * loaded batches into the state to commit.
 *
 *   discover(source, config, state)  ->  plan { files, decisions, nextState, ... }
 *   for each batch (a prefix of the remaining plan.files):
 *     load it; state = nextStateFor(state, plan, batch); commit data + state together
 *
 * A crash after any batch leaves a committed state from which the next run finds every
 * file of the later batches again.
 */
import { ConfigError } from '../errors.js';
import type { Storage } from '../storage/storage.js';
import {
  identifyCandidates,
  listModified,
  modifiedStateAfter,
  planModified,
  windowFloor,
} from './by-modified.js';
import { listFrom, partitionStateAfter, planPartitions, scanFrom } from './by-partition.js';
import { granularityOfId, type Granularity } from './calendar.js';
import { resolveDiscovery, type DiscoveryConfig, type PartitionSettings } from './config.js';
import { walkPartitions } from './partitions.js';
import {
  BEHIND_WINDOW_REASONS,
  compareFiles,
  type DiscoveredFile,
  type DiscoveryPlan,
} from './plan.js';
import { revisitBeforeWindow, type Revisited, type RevisitFile } from './revisit.js';
import {
  upgradeState,
  type DiscoveryState,
  type ModifiedState,
  type NotificationState,
  type PartitionState,
} from './state.js';
import { surveySource } from './survey.js';
import { notificationStateAfter, planNotified } from './notifications/plan.js';
import type { ReceivedMessage } from '../storage/sqs.js';

/** Default number of concurrent LIST requests. */
export const DEFAULT_LIST_CONCURRENCY = 8;

/** Options of `discover`. */
export interface DiscoverOptions {
  /** Concurrent LIST requests; default 8. */
  concurrency?: number;
  signal?: AbortSignal;
  /**
   * Files to look at again wherever they lie (the job's quarantined files): in partition mode,
   * those before the scan window are planned when overwritten (./revisit.ts); by modification
   * time with `incrementalListing`, those sorting before the listing's start are listed too.
   */
  revisit?: readonly RevisitFile[];
  /**
   * Modification-time discovery: keep the data files older than the window with a LastModified
   * after this (epoch ms; null: all) in `plan.behindWindow` (absent: none are kept).
   */
  behindWindowAfter?: number | null;
  /**
   * Notification discovery: the messages the caller received from the job's queue (it holds them,
   * and deletes them after the commits), and its clock (epoch ms), which schedules reconciling listings.
   */
  notifications?: { received: readonly ReceivedMessage[]; now: number };
}

/**
 * Plan a run: list the source through `storage` (rooted at the source prefix) and decide
 * which files to load, given the state committed by the previous run (null on the first).
 * Throws ConfigError for invalid settings or a state written by the other mode.
 */
export async function discover(
  storage: Storage,
  config: DiscoveryConfig,
  state: DiscoveryState | null,
  opts: DiscoverOptions = {},
): Promise<DiscoveryPlan> {
  const settings = resolveDiscovery(config);
  const prev = state === null ? null : upgradeState(state);
  const concurrency = opts.concurrency ?? DEFAULT_LIST_CONCURRENCY;
  if (settings.mode === 'partition') {
    const partitionState = checkPartitionState(prev, settings);
    const walk = await walkPartitions(storage, settings.layout, {
      from: listFrom(settings, partitionState),
      until: (serverTime) => settings.clock.partitionOf(serverTime, settings.layout.granularity),
      concurrency,
      signal: opts.signal,
    });
    const revisit = opts.revisit ?? [];
    const plan = withRevisited(
      planPartitions(walk, settings, partitionState),
      revisit,
      await revisitBeforeWindow(
        storage,
        settings,
        revisit,
        scanFrom(settings, partitionState),
        opts.signal,
      ),
    );
    if (partitionState === null)
      refuseFutureStart(
        settings.start,
        plan.window.mode === 'partition' ? plan.window.until : null,
        config.start,
      );
    if (walk.partitions.length > 0 || plan.files.length > 0) return plan;
    // No partition in range: a new landing zone, or a layout that fits nothing (a few more LISTs).
    const survey = await surveySource(storage, settings.layout, {
      selects: settings.selects,
      signal: opts.signal,
    });
    return { ...plan, survey, listRequests: plan.listRequests + survey.listRequests };
  }
  if (settings.mode === 'notifications') {
    if (!opts.notifications)
      throw new Error(
        '[discovery] notification discovery needs the messages received (DiscoverOptions.notifications)',
      );
    const { received, now } = opts.notifications;
    const plan = await planNotified(storage, settings, checkNotificationState(prev), received, {
      concurrency,
      now,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return plan.notifications?.reconciled &&
      plan.partitionsListed.length === 0 &&
      plan.files.length === 0 &&
      plan.decisions.length === 0
      ? { ...plan, survey: { root: 'unknown', empty: true, mismatch: null, listRequests: 0 } }
      : plan;
  }
  const modifiedState = checkModifiedState(prev);
  // Stats only while listing: a local source's content digests are read for the candidates alone.
  const listed = await listModified(storage, {
    floor: windowFloor(settings, modifiedState),
    keepAll: settings.requireSuccessMarker,
    ...(opts.behindWindowAfter !== undefined ? { behindAfter: opts.behindWindowAfter } : {}),
    concurrency,
    signal: opts.signal,
    deferContentEtags: true,
    ...(settings.incrementalListing
      ? {
          startAfter: modifiedState?.listAfter ?? null,
          revisitKeys: (opts.revisit ?? []).map((f) => f.key),
        }
      : {}),
  });
  const listing = await identifyCandidates(storage, listed, settings, modifiedState, opts.signal);
  const plan = planModified(listing, settings, modifiedState);
  if (
    modifiedState === null &&
    settings.start !== null &&
    settings.start > listing.serverTime.getTime()
  ) {
    throw futureStart(config.start, listing.serverTime.toISOString());
  }
  const nothing =
    listing.objects.length +
      listing.olderThanWindow +
      listing.prefixesListed.length +
      listing.skippedFolders.length ===
    0;
  return nothing
    ? { ...plan, survey: { root: 'unknown', empty: true, mismatch: null, listRequests: 0 } }
    : plan;
}

/**
 * The refusal a run would meet for a committed state written under other settings (another
 * `discover.by`, a layout of another granularity), or null when the state fits; `validate` asks.
 */
export function stateMismatch(
  config: DiscoveryConfig,
  state: DiscoveryState | null,
): ConfigError | null {
  try {
    const settings = resolveDiscovery(config);
    const prev = state === null ? null : upgradeState(state);
    if (settings.mode === 'partition') checkPartitionState(prev, settings);
    else if (settings.mode === 'notifications') checkNotificationState(prev);
    else checkModifiedState(prev);
    return null;
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
}

/**
 * A partition plan with the overwritten files found before its window (./revisit.ts). The files to
 * revisit are decided there alone: the late check does not report them too.
 */
function withRevisited(
  plan: DiscoveryPlan,
  revisit: readonly RevisitFile[],
  revisited: Revisited,
): DiscoveryPlan {
  const revisitKeys = new Set(revisit.map((f) => f.key));
  const own = plan.decisions.filter(
    (d) => !(BEHIND_WINDOW_REASONS.has(d.reason) && revisitKeys.has(d.key)),
  );
  if (revisited.prefixes.length === 0)
    return own.length === plan.decisions.length ? plan : { ...plan, decisions: own };
  const files = [...revisited.files, ...plan.files].sort(compareFiles);
  const from = plan.window.mode === 'partition' ? plan.window.from : null;
  return {
    ...plan,
    files,
    decisions: [...revisited.decisions, ...own],
    partitionsListed: [...revisited.prefixes, ...plan.partitionsListed],
    listRequests: plan.listRequests + revisited.listRequests,
    nextState:
      plan.basis.mode === 'partition'
        ? partitionStateAfter(plan.prevState as PartitionState | null, plan.basis, files, from)
        : plan.nextState,
  };
}

/**
 * The state to commit after loading `loaded` (the next batch of `plan.files`) on top of
 * `prevState` (the state committed before this batch; `plan.prevState` for the first).
 * Batches folded one by one give the same state as `plan.nextState`.
 */
export function nextStateFor(
  prevState: DiscoveryState | null,
  plan: DiscoveryPlan,
  loaded: readonly DiscoveredFile[],
): DiscoveryState | null {
  if (prevState !== null && prevState.mode !== plan.mode) {
    throw new Error(`[discovery] cannot fold a ${plan.mode} plan into a ${prevState.mode} state`);
  }
  if (plan.basis.mode === 'partition')
    return partitionStateAfter(
      prevState as PartitionState | null,
      plan.basis,
      loaded,
      plan.window.mode === 'partition' ? plan.window.from : null,
    );
  // A reconciling listing is recorded done only with the plan's last files (the caller's `notificationStateAfter`).
  if (plan.basis.mode === 'notifications')
    return notificationStateAfter(prevState as NotificationState | null, plan.basis, loaded, false);
  return modifiedStateAfter(
    prevState as ModifiedState | null,
    plan.basis,
    loaded,
    plan.overwrittenIgnored,
  );
}

/**
 * A `start` after the store's clock would make every run find nothing new, without a word, until
 * that time comes: refused (the first run only; the state decides afterwards).
 */
function refuseFutureStart(
  start: string | null,
  current: string | null,
  text: string | undefined,
): void {
  if (start !== null && current !== null && start > current)
    throw futureStart(text, `partition ${current}`);
}

function futureStart(text: string | undefined, now: string): ConfigError {
  return new ConfigError(
    `[discovery] start ${JSON.stringify(text)} is after the store's clock (now ${now}): every run would find nothing new until then; give a start that has come`,
    { field: 'discover.start' },
  );
}

function modeMismatch(state: DiscoveryState, mode: string): ConfigError {
  if (state.mode === 'notifications' || mode === 'notifications') {
    // Notification discovery has no watermark to reset to, and a ledger the other modes read otherwise.
    return new ConfigError(
      `[discovery] the committed state was written by discover.by '${state.mode}' but the job now uses '${mode}'; ` +
        'a job cannot change to or from notifications: load with a new job (another name, run once with --fresh) or a new target',
      { field: 'discover.by' },
    );
  }
  return new ConfigError(
    `[discovery] the committed state was written by discover.by '${state.mode}' but the job now uses '${mode}'; ` +
      'reset the job to a watermark of the new mode (tidemark reset)',
    { field: 'discover.by' },
  );
}

function checkPartitionState(
  state: DiscoveryState | null,
  settings: PartitionSettings,
): PartitionState | null {
  if (state === null) return null;
  if (state.mode !== 'partition') throw modeMismatch(state, 'partition');
  const granularity = settings.layout.granularity;
  if (granularityOfId(state.watermark) !== granularity) {
    throw new ConfigError(
      `[discovery] the committed watermark ${state.watermark} does not fit layout '${settings.layout.text}' (${granularity} partitions); ` +
        `reset the job to ${resetValue(state.watermark, granularity)} (tidemark reset --to ${resetValue(state.watermark, granularity)})`,
      { field: 'discover.layout', resetTo: resetValue(state.watermark, granularity) },
    );
  }
  return state;
}

/**
 * The watermark of the new granularity that loads nothing twice and misses nothing: a day watermark
 * becomes its last hour; an hour watermark the day before it (its day was partly loaded: a merge
 * loads it again idempotently).
 */
function resetValue(watermark: string, granularity: Granularity): string {
  if (granularity === 'hour') return `${watermark}T23`;
  const day = new Date(`${watermark.slice(0, 10)}T00:00:00Z`);
  return watermark.endsWith('T23')
    ? watermark.slice(0, 10)
    : new Date(day.getTime() - 86_400_000).toISOString().slice(0, 10);
}

function checkNotificationState(state: DiscoveryState | null): NotificationState | null {
  if (state === null) return null;
  if (state.mode !== 'notifications') throw modeMismatch(state, 'notifications');
  return state;
}

function checkModifiedState(state: DiscoveryState | null): ModifiedState | null {
  if (state === null) return null;
  if (state.mode !== 'modified') throw modeMismatch(state, 'modified');
  return state;
}
