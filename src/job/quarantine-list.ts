/**
 * The quarantine list across the owners of a job's states: the job and its backfill (each shard).
 * Each owner keeps the files it set aside (./quarantine.ts) and drops one it loads later itself.
 * A file one owner set aside and another loaded later (a fixed file a backfill reloads, a
 * backfill's bad file the job loads once overwritten) is recorded by the loader as `cleared`,
 * since an owner never writes another's state (they commit side by side without conflicting).
 * The job's list, as `tidemark status` shows it and as runs revisit it, is every owner's list
 * without the files cleared after they were set aside.
 */
import type { Snapshot } from '../delta/snapshot.js';
import { readBackfillStates } from './backfill/state.js';
import { MAX_QUARANTINED, type ClearedFile, type QuarantinedFile } from './quarantine.js';
import { jobAppId, readJobState } from './state.js';

/** What an owner's state says about quarantine. */
interface QuarantineRecord {
  quarantined?: readonly QuarantinedFile[];
  cleared?: readonly ClearedFile[];
}

/** Every owner's state of the job in `snapshot`, by appId. */
function recordsOf(snapshot: Snapshot | null, job: string): Map<string, QuarantineRecord> {
  const records = new Map<string, QuarantineRecord>([[jobAppId(job), readJobState(snapshot, job)]]);
  for (const [appId, state] of readBackfillStates(snapshot, job)) records.set(appId, state);
  return records;
}

/**
 * The job's quarantined files: every owner's, newest per key, without those another owner loaded
 * after they were set aside; oldest first.
 */
export function quarantinedFiles(snapshot: Snapshot | null, job: string): QuarantinedFile[] {
  const records = [...recordsOf(snapshot, job).values()];
  const clearedAt = new Map<string, string>();
  for (const c of records.flatMap((r) => r.cleared ?? []))
    if ((clearedAt.get(c.key) ?? '') < c.at) clearedAt.set(c.key, c.at);
  const newest = new Map<string, QuarantinedFile>();
  for (const q of records.flatMap((r) => r.quarantined ?? [])) {
    if ((clearedAt.get(q.key) ?? '') > q.at) continue;
    const seen = newest.get(q.key);
    if (!seen || seen.at < q.at) newest.set(q.key, q);
  }
  return [...newest.values()].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** The files the other owners of the job's states (all but `owner`, an appId) have quarantined. */
export function quarantinedByOthers(
  snapshot: Snapshot | null,
  job: string,
  owner: string,
): QuarantinedFile[] {
  return [...recordsOf(snapshot, job)]
    .filter(([appId]) => appId !== owner)
    .flatMap(([, r]) => r.quarantined ?? []);
}

/**
 * An owner's `cleared` after loading `loaded` (keys of files it loaded, not set aside): the
 * earlier entries, plus the loaded files another owner had quarantined; the newest MAX_QUARANTINED.
 */
export function withCleared(
  cleared: readonly ClearedFile[] | undefined,
  others: readonly QuarantinedFile[],
  loaded: ReadonlyArray<{ key: string; etag: string }>,
  now: Date,
): ClearedFile[] | undefined {
  const set = new Set(others.map((q) => q.key));
  const added = loaded
    .filter((f) => set.has(f.key))
    .map((f) => ({ key: f.key, etag: f.etag, at: now.toISOString() }));
  if (added.length === 0) return cleared === undefined ? undefined : [...cleared];
  const keys = new Set(added.map((c) => c.key));
  return [...(cleared ?? []).filter((c) => !keys.has(c.key)), ...added].slice(-MAX_QUARANTINED);
}
