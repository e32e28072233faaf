/**
 * Notification discovery: plan a run from the messages received from the job's SQS queue, and,
 * every `reconcileEvery`, from a listing of the whole prefix (files whose event was lost).
 *
 *   messages -> events (./envelope.ts) -> keys in the source's bucket and prefix, data, selected
 *            -> HEAD each key once: the object as it is now (an event may be old, duplicated or
 *               out of order: the store, not the event, says which version is there)
 *   [reconcile due] + every data file listed under the prefix
 *   -> files 'new' here; the job layer checks them against its ledger (`withLedgerAnswers`), the
 *      one record of every file the job loaded, committed with the data
 *
 * Each message keeps the keys it named: it is deleted once every one of them is committed or
 * needs no load (the caller's part). Events for other buckets or prefixes, other event kinds and
 * S3's test event need nothing: counted, and their messages deleted. Unreadable bodies stay on the
 * queue (its redrive policy decides) and are named.
 */
import pLimit from 'p-limit';
import { ConfigError } from '../../errors.js';
import type { ReceivedMessage } from '../../storage/sqs.js';
import type { ObjectInfo, Storage } from '../../storage/storage.js';
import { describeUri } from '../../storage/uri.js';
import { listModified } from '../by-modified.js';
import type { NotificationSettings } from '../config.js';
import { isNotData, judgeFile } from '../identity.js';
import {
  compareFiles,
  type Decision,
  type DiscoveredFile,
  type DiscoveryPlan,
  type StateBasis,
} from '../plan.js';
import type { NotificationState } from '../state.js';
import { parseBody } from './envelope.js';
import type { HeldMessage, NotificationIntake } from './intake.js';

/** Options of `planNotified`. */
export interface PlanNotifiedOptions {
  /** Concurrent HEAD and LIST requests. */
  concurrency: number;
  /** The local clock (epoch ms) that decides whether a reconciling listing is due; it only schedules listings. */
  now: number;
  signal?: AbortSignal;
}

/** True when a reconciling listing is due: never done, or `reconcileEvery` ago. */
export function reconcileDue(
  settings: NotificationSettings,
  state: NotificationState | null,
  now: number,
): boolean {
  return state?.reconciledAt === undefined || now - state.reconciledAt >= settings.reconcileEveryMs;
}

/**
 * Plan a run from received messages (and a reconciling listing when due). `storage` is the
 * source, rooted at its `s3://bucket/prefix/`. Files are 'new' here: `withLedgerAnswers` decides.
 */
export async function planNotified(
  storage: Storage,
  settings: NotificationSettings,
  state: NotificationState | null,
  received: readonly ReceivedMessage[],
  opts: PlanNotifiedOptions,
): Promise<DiscoveryPlan> {
  const location = describeUri(storage.uri);
  if (location.kind !== 's3') {
    throw new ConfigError(
      `[discovery] discover.by: notifications needs an s3:// source (S3 sends the events), got ${storage.uri}`,
      { field: 'discover.by' },
    );
  }
  const intake: NotificationIntake = {
    messages: [],
    unreadable: [],
    counts: { messages: received.length, events: 0, outside: 0, notCreated: 0, gone: 0 },
    reconciled: false,
  };
  const decisions: Decision[] = [];
  const wanted = new Set<string>();
  for (const m of received) {
    const parsed = parseBody(m.body);
    if (parsed.kind === 'unreadable') {
      intake.unreadable.push({ id: m.id, why: parsed.why });
      continue;
    }
    const held: HeldMessage = { ...m, kind: parsed.kind, keys: [] };
    intake.messages.push(held);
    if (parsed.kind === 'test') {
      intake.counts.notCreated += 1;
      continue;
    }
    for (const e of parsed.events) {
      intake.counts.events += 1;
      if (e.bucket !== location.bucket || !e.key.startsWith(location.prefix))
        intake.counts.outside += 1;
      else if (!e.created) intake.counts.notCreated += 1;
      else {
        const key = e.key.slice(location.prefix.length);
        const skip = isNotData(key) ? 'not data' : settings.selects(key) ? null : 'excluded';
        if (skip !== null) {
          if (!wanted.has(key)) decisions.push({ key, action: 'skip', reason: skip });
          continue;
        }
        wanted.add(key);
        if (!held.keys.includes(key)) held.keys.push(key);
      }
    }
  }
  // Each key once, as the store holds it now.
  const limit = pLimit(opts.concurrency);
  const found = new Map<string, ObjectInfo>();
  await Promise.all(
    [...wanted].map((key) =>
      limit(async () => {
        opts.signal?.throwIfAborted();
        const info = await storage.head(key);
        if (info !== null) found.set(key, { ...info, key });
      }),
    ),
  );
  for (const key of wanted) {
    if (found.has(key)) continue;
    intake.counts.gone += 1;
    decisions.push({ key, action: 'skip', reason: 'gone before it was loaded' });
  }
  let serverTime = new Date(opts.now);
  let listRequests = 0;
  let partitionsListed: string[] = [];
  const due = reconcileDue(settings, state, opts.now);
  let reconciledAt: number | undefined;
  if (due) {
    const listing = await listModified(storage, {
      floor: settings.start === null ? null : settings.start - 1,
      keepAll: false,
      concurrency: opts.concurrency,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    serverTime = listing.serverTime;
    reconciledAt = listing.serverTime.getTime();
    listRequests = listing.listRequests;
    partitionsListed = listing.prefixesListed;
    intake.reconciled = true;
    for (const o of listing.objects) {
      if (found.has(o.key) || isNotData(o.key)) continue;
      if (!settings.selects(o.key)) {
        if (!wanted.has(o.key)) decisions.push({ key: o.key, action: 'skip', reason: 'excluded' });
        continue;
      }
      found.set(o.key, o);
    }
  }
  const files: DiscoveredFile[] = [...found.values()].map((o) => ({
    ...o,
    arrival: o.lastModified,
  }));
  files.sort(compareFiles);
  for (const f of files) decisions.push({ key: f.key, action: 'load', reason: 'new' });
  const basis: StateBasis = {
    mode: 'notifications',
    ...(reconciledAt !== undefined ? { reconciledAt } : {}),
  };
  return {
    mode: 'notifications',
    files,
    decisions,
    olderThanWindow: 0,
    partitionsListed,
    skippedFolders: [],
    window: { mode: 'notifications', reconciling: due },
    serverTime,
    listRequests,
    onOverwrite: settings.onOverwrite,
    prevState: state,
    nextState: notificationStateAfter(state, basis, files, true),
    basis,
    overwrittenIgnored: [],
    behindWindow: [],
    waiting: [],
    notifications: intake,
  };
}

/**
 * The plan after checking its files against the job's ledger (pure). `notLoaded` holds, of the
 * plan's files, those the ledger lacks (null) or holds in another version (the ETag loaded); a
 * file not in it is loaded already, with this ETag, and is skipped.
 */
export function withLedgerAnswers(
  plan: DiscoveryPlan,
  notLoaded: ReadonlyMap<string, string | null>,
): DiscoveryPlan {
  if (plan.basis.mode !== 'notifications') return plan;
  const files: DiscoveredFile[] = [];
  const ignored: DiscoveredFile[] = [];
  const judged = new Map<string, Pick<Decision, 'action' | 'reason'>>();
  for (const f of plan.files) {
    const loaded = notLoaded.get(f.key);
    const decision: Pick<Decision, 'action' | 'reason'> =
      loaded === undefined
        ? { action: 'skip', reason: 'already loaded' }
        : judgeFile(loaded ?? undefined, f.etag, plan.onOverwrite);
    judged.set(f.key, decision);
    if (decision.action === 'load')
      files.push(
        decision.reason === 'overwritten, reloading' ? { ...f, loadedBefore: true as const } : f,
      );
    else if (decision.reason === 'overwritten, ignored') ignored.push(f);
  }
  const decisions = plan.decisions.map((d) =>
    d.action === 'load' && judged.has(d.key) ? { ...d, ...judged.get(d.key)! } : d,
  );
  return {
    ...plan,
    files,
    decisions,
    overwrittenIgnored: ignored,
    nextState: notificationStateAfter(
      plan.prevState as NotificationState | null,
      plan.basis,
      files,
      true,
    ),
  };
}

/**
 * The state after loading `loaded` on top of `prev`. `complete`: these are the plan's last files,
 * so its reconciling listing (if any) is done: only then is `reconciledAt` recorded, or a crash
 * between batches would leave files the listing found, and no event names, unloaded until the next.
 */
export function notificationStateAfter(
  prev: NotificationState | null,
  basis: Extract<StateBasis, { mode: 'notifications' }>,
  loaded: readonly DiscoveredFile[],
  complete: boolean,
): NotificationState | null {
  const reconciledAt =
    complete && basis.reconciledAt !== undefined ? basis.reconciledAt : prev?.reconciledAt;
  if (loaded.length === 0 && reconciledAt === prev?.reconciledAt) return prev;
  const newest = loaded.reduce(
    (max, f) => Math.max(max, f.lastModified.getTime()),
    prev?.watermark ?? -Infinity,
  );
  return {
    stateVersion: 1,
    mode: 'notifications',
    watermark: Number.isFinite(newest) ? newest : null,
    ...(reconciledAt !== undefined ? { reconciledAt } : {}),
  };
}
