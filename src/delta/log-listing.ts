/**
 * Finding what to replay: the newest complete checkpoint at or below the wanted version,
 * then every commit after it, without gaps (docs/delta-protocol.md, Log files).
 *
 * `_last_checkpoint` is only a hint: when it is missing, corrupt or stale, the whole
 * `_delta_log/` folder is listed instead.
 */
import { DeltaLogError } from '../errors.js';
import type { Storage } from '../storage/storage.js';
import {
  classifyLogKey,
  LAST_CHECKPOINT_KEY,
  LOG_DIR,
  padVersion,
  type LogFile,
} from './log-files.js';

/** The fields of `_last_checkpoint` that tidemark uses. */
export interface LastCheckpointHint {
  version: number;
  /** Number of actions in the checkpoint. */
  size?: number;
  /** Number of parts of a multi-part checkpoint. */
  parts?: number;
}

/** A commit file found in the log. */
export interface CommitRef {
  version: number;
  /** Key relative to the table root. */
  key: string;
}

/** A complete checkpoint found in the log. */
export interface CheckpointRef {
  version: number;
  /** classic = `N.checkpoint.parquet`; multipart = all parts present; v2 = UUID-named. */
  kind: 'classic' | 'multipart' | 'v2';
  /** Keys relative to the table root; the parts in part order. */
  keys: string[];
}

/** What a listing of `_delta_log/` found. */
export interface LogListing {
  /** Commits in ascending version. */
  commits: CommitRef[];
  /** Complete checkpoints in ascending version (classic before multipart at equal versions). */
  checkpoints: CheckpointRef[];
}

/** What to read to build the snapshot at `version`. */
export interface ReplayPlan {
  version: number;
  /** The checkpoint to start from, or null to start at commit 0. */
  checkpoint: CheckpointRef | null;
  /** The commits after the checkpoint up to `version`, contiguous and ascending. */
  commits: CommitRef[];
}

/**
 * Read `_last_checkpoint`. Returns null when it is missing or unusable (corrupt JSON, no
 * valid version): it is only a hint. Storage failures still throw.
 */
export async function readLastCheckpoint(storage: Storage): Promise<LastCheckpointHint | null> {
  const bytes = await storage.read(LAST_CHECKPOINT_KEY);
  if (bytes === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object') return null;
  const { version, size, parts } = parsed as Record<string, unknown>;
  if (!Number.isSafeInteger(version) || (version as number) < 0) return null;
  const hint: LastCheckpointHint = { version: version as number };
  if (Number.isSafeInteger(size)) hint.size = size as number;
  if (Number.isSafeInteger(parts)) hint.parts = parts as number;
  return hint;
}

/**
 * List `_delta_log/` (only its own files, never subfolders), optionally starting at
 * `fromVersion` (earlier versions are skipped by the store, S3 `StartAfter`).
 */
export async function listLog(storage: Storage, fromVersion?: number): Promise<LogListing> {
  const files: Array<{ file: LogFile; key: string }> = [];
  const startAfter = fromVersion === undefined ? undefined : LOG_DIR + padVersion(fromVersion);
  for await (const page of storage.list({ prefix: LOG_DIR, delimiter: '/', startAfter })) {
    for (const object of page.objects) {
      const file = classifyLogKey(object.key);
      if (file) files.push({ file, key: object.key });
    }
  }
  return {
    commits: collectCommits(files),
    checkpoints: collectCheckpoints(files),
  };
}

function collectCommits(files: Array<{ file: LogFile; key: string }>): CommitRef[] {
  const commits: CommitRef[] = [];
  for (const { file, key } of files) {
    if (file.kind === 'commit') commits.push({ version: file.version, key });
  }
  return commits.sort((a, b) => a.version - b.version);
}

const KIND_ORDER = { classic: 0, multipart: 1, v2: 2 } as const;

function collectCheckpoints(files: Array<{ file: LogFile; key: string }>): CheckpointRef[] {
  const checkpoints: CheckpointRef[] = [];
  // Multi-part checkpoints are grouped by (version, part count); only complete groups count.
  const partGroups = new Map<
    string,
    { version: number; parts: number; keys: Map<number, string> }
  >();
  for (const { file, key } of files) {
    if (file.kind === 'checkpoint')
      checkpoints.push({ version: file.version, kind: 'classic', keys: [key] });
    if (file.kind === 'checkpoint-v2')
      checkpoints.push({ version: file.version, kind: 'v2', keys: [key] });
    if (file.kind !== 'checkpoint-part') continue;
    const id = `${file.version}/${file.parts}`;
    const group = partGroups.get(id) ?? {
      version: file.version,
      parts: file.parts,
      keys: new Map(),
    };
    group.keys.set(file.part, key);
    partGroups.set(id, group);
  }
  for (const group of partGroups.values()) {
    if (group.keys.size !== group.parts) continue;
    const keys = [...group.keys.entries()].sort((a, b) => a[0] - b[0]).map(([, key]) => key);
    checkpoints.push({ version: group.version, kind: 'multipart', keys });
  }
  return checkpoints.sort(
    (a, b) => a.version - b.version || KIND_ORDER[a.kind] - KIND_ORDER[b.kind],
  );
}

/** Newest version the listing knows of, or -1 when it is empty. */
export function latestVersion(listing: LogListing): number {
  const lastCommit = listing.commits.at(-1)?.version ?? -1;
  const lastCheckpoint = listing.checkpoints.at(-1)?.version ?? -1;
  return Math.max(lastCommit, lastCheckpoint);
}

/**
 * Choose the checkpoint and commits that rebuild `target` (default: the latest version): the
 * newest checkpoint at or below it, of any kind (classic first at equal versions).
 * Throws DeltaLogError when a needed commit is missing (a gap, or a cleaned-up log).
 */
export function planReplay(listing: LogListing, uri: string, target?: number): ReplayPlan {
  const latest = latestVersion(listing);
  const version = target ?? latest;
  if (!Number.isSafeInteger(version) || version < 0 || version > latest) {
    throw new DeltaLogError(
      `[delta] table ${uri} has no version ${version}; the latest is ${latest}`,
      {
        kind: 'usage',
        context: { uri, version },
      },
    );
  }
  const usable = listing.checkpoints.filter((c) => c.version <= version);
  const newest = usable.at(-1)?.version;
  // Several checkpoints of one version hold the same state: take the first kind (classic, multipart, v2).
  const checkpoint = usable.find((c) => c.version === newest) ?? null;
  const byVersion = new Map(listing.commits.map((c) => [c.version, c]));
  const commits: CommitRef[] = [];
  for (let v = checkpoint ? checkpoint.version + 1 : 0; v <= version; v++) {
    const commit = byVersion.get(v);
    if (!commit) throw missingCommit(uri, v, version, checkpoint);
    commits.push(commit);
  }
  return { version, checkpoint, commits };
}

function missingCommit(
  uri: string,
  missing: number,
  version: number,
  checkpoint: CheckpointRef | null,
): Error {
  const base = checkpoint
    ? `checkpoint ${checkpoint.version}`
    : 'the start of the log (no checkpoint at or below it)';
  return new DeltaLogError(
    `[delta] table ${uri}: commit ${missing} is missing, so version ${version} cannot be rebuilt from ${base}`,
    { context: { uri, version: missing, key: LOG_DIR + padVersion(missing) + '.json' } },
  );
}

/**
 * Find what to replay for `target` (default latest), or null when the table has no log.
 * Uses `_last_checkpoint` to list only the tail of the log; falls back to a full listing
 * when the hint is missing, corrupt, stale, or newer than the target.
 */
export async function locateSnapshot(
  storage: Storage,
  target?: number,
): Promise<ReplayPlan | null> {
  const hint = await readLastCheckpoint(storage);
  if (hint && (target === undefined || target >= hint.version)) {
    const tail = await listLog(storage, hint.version);
    const covered = tail.checkpoints.some((c) => target === undefined || c.version <= target);
    if (covered) return planReplay(tail, storage.uri, target);
  }
  const listing = await listLog(storage);
  if (listing.commits.length === 0 && listing.checkpoints.length === 0) {
    if (hint) {
      throw new DeltaLogError(
        `[delta] table ${storage.uri}: _last_checkpoint names version ${hint.version} but the log holds no commits`,
        { context: { uri: storage.uri, key: LAST_CHECKPOINT_KEY, version: hint.version } },
      );
    }
    return null;
  }
  return planReplay(listing, storage.uri, target);
}
