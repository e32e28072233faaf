/**
 * The commit loop: optimistic concurrency on put-if-absent.
 *
 *   data files already uploaded (outside this loop; they are never rewritten)
 *        │
 *   validate the request (one metaData/protocol, one txn per appId, unique file actions)
 *        │
 *   ┌─► build commitInfo (timestamp, readVersion, txnId, …) as the first line
 *   │    │
 *   │   storage.writeIfAbsent('_delta_log/<20-digit N>.json')   ◄── THE COMMIT POINT
 *   │    ├─ created          → committed at version N, done
 *   │    ├─ answer lost      → read N: our txnId there means it is our own commit, done (writeVersion)
 *   │    └─ already exists   → another writer won N
 *   │         │
 *   │   read the winners N, N+1, … up to the latest and check each one against what this
 *   │   transaction read (./conflicts.ts)
 *   │    ├─ a conflict       → CommitConflictError (re-plan on the new snapshot; never retry blindly)
 *   │    └─ none             → jittered backoff, then retry at latest+1 with readVersion = latest
 *   └──────┘  at most `maxAttempts` writes, then CommitRetriesExhaustedError
 *
 * Creating a table (readVersion -1) that loses the race for version 0 fails with the conflict
 * 'TableAlreadyExists': the caller re-opens the table and plans a normal write on it.
 *
 * Per attempt, table features stamp what depends on the version (./commit-stamps.ts): fresh row
 * ids and their high-water mark (row tracking), and the in-commit timestamp; a retry recomputes
 * them from the winners, never reusing a lost attempt's.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CommitConflictError,
  CommitRetriesExhaustedError,
  DeltaLogError,
  isTransient,
} from '../errors.js';
import type { Storage } from '../storage/storage.js';
import {
  fileActionKey,
  parseCommit,
  serializeCommit,
  type Action,
  type CommitInfo,
} from './actions.js';
import { CommitStamps, type CommitFeatures } from './commit-stamps.js';
import {
  checkConflicts,
  ISOLATION_LEVEL,
  type OurTransaction,
  type WinningCommit,
} from './conflicts.js';
import { commitKey } from './log-files.js';
import type { CommitRequest, CommitResult } from './transaction.js';

/** delta-rs' default number of commit attempts. */
export const DEFAULT_MAX_ATTEMPTS = 15;
/** First backoff ceiling; it doubles per attempt up to MAX_BACKOFF_MS. */
const BASE_BACKOFF_MS = 20;
const MAX_BACKOFF_MS = 1000;

/** Reported before each retry. */
export interface RetryInfo {
  /** The attempt that just lost (1-based). */
  attempt: number;
  /** The version another writer took. */
  lostVersion: number;
  /** The version the next attempt will write. */
  nextVersion: number;
}

export interface CommitOptions {
  /** Attempts (writes of a version file) before giving up; default 15. */
  maxAttempts?: number;
  /** Clock for commitInfo.timestamp (ms). */
  now?: () => number;
  signal?: AbortSignal;
  /** commitInfo.engineInfo; default `tidemark/<package version>`. */
  engineInfo?: string;
  onRetry?: (info: RetryInfo) => void;
  /** Table features that stamp each attempt (row ids, in-commit timestamps); none by default. */
  features?: CommitFeatures;
}

/**
 * Commit the request's actions as the next table version. Data files must already be written.
 * Throws CommitConflictError when a concurrent commit invalidates what this transaction read,
 * CommitRetriesExhaustedError after `maxAttempts` lost races, DeltaLogError for an invalid request.
 */
export async function commitWithRetry(
  storage: Storage,
  request: CommitRequest,
  opts: CommitOptions = {},
): Promise<CommitResult> {
  validateRequest(request, storage.uri);
  const maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const now = opts.now ?? Date.now;
  const engineInfo = opts.engineInfo ?? defaultEngineInfo();
  const ours = describe(request);
  const txnId = randomUUID();
  let readVersion = request.read.readVersion;
  const stamps = new CommitStamps(opts.features ?? {}, now);

  for (let attempt = 1; ; attempt++) {
    opts.signal?.throwIfAborted();
    const version = readVersion + 1;
    const stamped = stamps.forVersion(request.actions, version, storage.uri);
    const commitInfo = {
      ...buildCommitInfo(request, { readVersion, txnId, timestamp: now(), engineInfo }),
      ...stamped.commitInfo,
    };
    // commitInfo is always the first line, as in-commit timestamps require.
    const body = serializeCommit([{ commitInfo }, ...stamped.actions]);
    if ((await writeVersion(storage, version, body, txnId, opts.signal)) === 'ours') {
      return { version, attempts: attempt };
    }
    if (request.read.readVersion < 0) throw tableExists(storage.uri);
    const winners = await readWinners(storage, version);
    for (const winner of winners) {
      await stamps.learnFrom(winner, storage);
      const conflict = checkConflicts(request.read, ours, winner);
      if (conflict) {
        throw new CommitConflictError(conflict.type, conflict.message, {
          uri: storage.uri,
          version: conflict.winnerVersion,
          readVersion: request.read.readVersion,
          ...(conflict.subject === undefined ? {} : { subject: conflict.subject }),
        });
      }
    }
    readVersion = version - 1 + winners.length;
    if (attempt >= maxAttempts) throw exhausted(storage.uri, attempt, readVersion);
    opts.onRetry?.({ attempt, lostVersion: version, nextVersion: readVersion + 1 });
    await backoff(attempt, opts.signal);
  }
}

/**
 * Write version N if absent and say whose commit is there. The answer to the write can be lost
 * after the store acted (HTTP 500 after the write, a connection reset after it landed): the
 * storage then finds the key taken on its retry, or gives up with a transient error. Either
 * way version N is read back; a commitInfo.txnId equal to ours means the commit is our own.
 * Nothing at N after a transient error means nothing was committed: the error stands.
 */
async function writeVersion(
  storage: Storage,
  version: number,
  body: string,
  txnId: string,
  signal?: AbortSignal,
): Promise<'ours' | 'taken'> {
  const key = commitKey(version);
  try {
    if (await storage.writeIfAbsent(key, body, { contentType: 'application/json', signal }))
      return 'ours';
  } catch (err) {
    if (!isTransient(err)) throw err;
    const existing = await storage.read(key).catch(() => null);
    if (existing === null) throw err;
    return txnIdOf(existing) === txnId ? 'ours' : 'taken';
  }
  const existing = await storage.read(key);
  return existing !== null && txnIdOf(existing) === txnId ? 'ours' : 'taken';
}

/** commitInfo.txnId of a commit file (its first line), or undefined. */
function txnIdOf(bytes: Uint8Array): string | undefined {
  const text = Buffer.from(bytes).toString('utf8');
  const end = text.indexOf('\n');
  try {
    const first = JSON.parse(end < 0 ? text : text.slice(0, end)) as {
      commitInfo?: { txnId?: unknown };
    };
    return typeof first.commitInfo?.txnId === 'string' ? first.commitInfo.txnId : undefined;
  } catch {
    return undefined; // not a commit we wrote; readWinners reports a malformed one
  }
}

/** Fields of commitInfo that change between attempts. */
interface AttemptInfo {
  readVersion: number;
  txnId: string;
  timestamp: number;
  engineInfo: string;
}

/** commitInfo as Spark writes it; operationParameters values are JSON text, like Spark's. */
export function buildCommitInfo(request: CommitRequest, attempt: AttemptInfo): CommitInfo {
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.operationParameters ?? {})) {
    if (v !== undefined) params[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return {
    timestamp: attempt.timestamp,
    operation: request.operation,
    operationParameters: params,
    // Spark omits readVersion when creating a table.
    ...(attempt.readVersion >= 0 ? { readVersion: attempt.readVersion } : {}),
    isolationLevel: ISOLATION_LEVEL,
    isBlindAppend: request.isBlindAppend,
    operationMetrics: request.operationMetrics ?? {},
    engineInfo: attempt.engineInfo,
    txnId: attempt.txnId,
  };
}

/** Every commit from `from` up to the latest; `from` must exist (we just lost the race for it). */
async function readWinners(storage: Storage, from: number): Promise<WinningCommit[]> {
  const winners: WinningCommit[] = [];
  for (let version = from; ; version++) {
    const bytes = await storage.read(commitKey(version));
    if (bytes === null) break;
    winners.push({
      version,
      actions: parseCommit(Buffer.from(bytes).toString('utf8'), version, storage.uri),
    });
  }
  if (winners.length === 0) {
    throw new DeltaLogError(
      `[delta] commit ${from} of ${storage.uri} already existed but cannot be read; is put-if-absent honoured by this store?`,
      { context: { uri: storage.uri, version: from, key: commitKey(from) } },
    );
  }
  return winners;
}

function describe(request: CommitRequest): OurTransaction {
  return {
    actions: request.actions,
    isBlindAppend: request.isBlindAppend,
    changesMetadata: request.actions.some((a) => 'metaData' in a),
    changesProtocol: request.actions.some((a) => 'protocol' in a),
  };
}

/**
 * The writer rules of PROTOCOL.md for one commit. A violation is a bug in the caller, so it
 * throws before anything is written.
 */
export function validateRequest(request: CommitRequest, uri: string): void {
  const fail = (why: string): never => {
    throw new DeltaLogError(`[delta] invalid ${request.operation} commit to ${uri}: ${why}`, {
      context: { uri, version: request.read.readVersion + 1 },
    });
  };
  const { readVersion } = request.read;
  if (!Number.isSafeInteger(readVersion) || readVersion < -1)
    fail(`readVersion ${readVersion} is not an integer >= -1`);
  const counts = { metaData: 0, protocol: 0 };
  const appIds = new Set<string>();
  const adds = new Set<string>();
  const removes = new Set<string>();
  for (const a of request.actions) checkAction(a, { counts, appIds, adds, removes }, fail);
  if (counts.metaData > 1) fail(`${counts.metaData} metaData actions (at most one)`);
  if (counts.protocol > 1) fail(`${counts.protocol} protocol actions (at most one)`);
  if (readVersion === -1 && (counts.metaData === 0 || counts.protocol === 0)) {
    fail('version 0 must contain both protocol and metaData');
  }
}

interface Seen {
  counts: { metaData: number; protocol: number };
  appIds: Set<string>;
  adds: Set<string>;
  removes: Set<string>;
}

function checkAction(a: Action, seen: Seen, fail: (why: string) => never): void {
  if ('commitInfo' in a) fail('commitInfo is added by the commit loop, not the request');
  else if ('sidecar' in a || 'checkpointMetadata' in a)
    fail(`a '${Object.keys(a)[0]}' action belongs in checkpoints only`);
  else if ('metaData' in a) seen.counts.metaData++;
  else if ('protocol' in a) seen.counts.protocol++;
  else if ('txn' in a)
    addOnce(seen.appIds, a.txn.appId, `two txn actions for appId '${a.txn.appId}'`, fail);
  else if ('add' in a)
    addOnce(
      seen.adds,
      fileActionKey(a.add.path, a.add.deletionVector),
      `two adds of ${a.add.path}`,
      fail,
    );
  else if ('remove' in a) {
    addOnce(
      seen.removes,
      fileActionKey(a.remove.path, a.remove.deletionVector),
      `two removes of ${a.remove.path}`,
      fail,
    );
  }
}

function addOnce(set: Set<string>, key: string, why: string, fail: (why: string) => never): void {
  if (set.has(key)) fail(why);
  set.add(key);
}

function tableExists(uri: string): CommitConflictError {
  return new CommitConflictError(
    'TableAlreadyExists',
    `[delta] cannot create table ${uri}: another writer created it first`,
    {
      uri,
      version: 0,
    },
  );
}

function exhausted(uri: string, attempts: number, latest: number): CommitRetriesExhaustedError {
  return new CommitRetriesExhaustedError(
    `[delta] gave up committing to ${uri} after ${attempts} attempts: other writers kept winning (latest version ${latest})`,
    { kind: 'conflict', context: { uri, version: latest, attempts } },
  );
}

/** Full jitter: a random wait up to a ceiling that doubles per attempt, so racing writers spread out. */
async function backoff(attempt: number, signal: AbortSignal | undefined): Promise<void> {
  const ceiling = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (attempt - 1));
  await sleep(Math.floor(Math.random() * ceiling), undefined, signal ? { signal } : undefined);
}

let engineInfoCache: string | undefined;

/** `tidemark/<version>` from package.json (two levels up from both src/delta and dist/delta). */
export function defaultEngineInfo(): string {
  if (engineInfoCache === undefined) {
    let version = 'unknown';
    try {
      const pkg = JSON.parse(
        readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
      ) as { version?: string };
      version = pkg.version ?? version;
    } catch {
      // A missing package.json only makes engineInfo less precise.
    }
    engineInfoCache = `tidemark/${version}`;
  }
  return engineInfoCache;
}
