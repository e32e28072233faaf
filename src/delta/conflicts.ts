/**
 * Conflict detection for optimistic commits (pure: no I/O).
 *
 * When our write of version N fails because another writer (the "winner") created it first,
 * the commit loop hands every winning commit to `checkConflicts`. The checks run in Spark's
 * order (ConflictChecker.scala; docs/delta-protocol.md, Commits and conflicts):
 *
 *   1. ProtocolChanged          the winner changed the protocol
 *   2. MetadataChanged          the winner changed metaData (schema, partitioning, properties)
 *   3. ConcurrentDomainMetadata both wrote the same domain (except `delta.rowTracking`: the
 *                               loser's row ids are recounted from the winner's mark, ./commit-stamps.ts)
 *   4. ConcurrentTransaction    the winner wrote a txn for an appId we read (or write)
 *   5. ConcurrentAppend         the winner added data into partitions we read (and, when we read
 *                               by key bounds, within them as its files' statistics tell)
 *   6. ConcurrentDeleteRead     the winner removed (dataChange) a file we read
 *   7. ConcurrentDeleteDelete   the winner removed a file we also remove
 *
 * Isolation level: WriteSerializable (Spark's default for writes). Under it, a winner whose
 * commitInfo says `isBlindAppend: true` does not conflict with our reads unless we change
 * metadata: the blind append's rows are serialised after ours. A transaction whose file actions
 * are all dataChange=false (OPTIMIZE) runs at snapshot isolation and skips check 5.
 *
 * Finer than Spark's partition-level check, as the protocol allows: a MERGE declares the key
 * bounds it read (ReadSet.keyBounds). A winner's add whose min/max statistics lie outside them
 * holds no row the MERGE read, so writers of disjoint keys in one partition, or in an unpartitioned
 * table, pass each other (ConcurrentAppend); and since such a reader lists every file that may
 * hold its keys, only removes of those files count against it, also when it read 'all' partitions.
 * Without key bounds, having read 'all' partitions means any dataChange remove conflicts.
 *
 * Stricter than Spark: any winner protocol change conflicts (Spark re-checks that it can still
 * read and write the new protocol). Protocol upgrades are rare and the caller simply re-plans
 * on the new snapshot, which runs the full feature check.
 */
import type { Action, AddFile, RemoveFile } from './actions.js';
import { mayHoldKeys } from './key-bounds.js';
import { ROW_TRACKING_DOMAIN } from './row-tracking.js';
import type { ReadSet } from './transaction.js';

export type ConflictType =
  | 'ProtocolChanged'
  | 'MetadataChanged'
  | 'ConcurrentDomainMetadata'
  | 'ConcurrentTransaction'
  | 'ConcurrentAppend'
  | 'ConcurrentDeleteRead'
  | 'ConcurrentDeleteDelete';

/** Why a winning commit invalidates our transaction. */
export interface Conflict {
  type: ConflictType;
  /** Version of the winning commit. */
  winnerVersion: number;
  /** Human-readable reason naming the file, appId or domain concerned. */
  message: string;
  /** The file path, appId or domain the conflict is about, when there is one. */
  subject?: string;
}

/** Our side of the check: the actions we want to commit and what they change. */
export interface OurTransaction {
  actions: readonly Action[];
  isBlindAppend: boolean;
  changesMetadata: boolean;
  changesProtocol: boolean;
}

/** A commit that won the race for a version we wanted. */
export interface WinningCommit {
  version: number;
  actions: readonly Action[];
}

/** The isolation level this checker implements (written to commitInfo.isolationLevel). */
export const ISOLATION_LEVEL = 'WriteSerializable';

/** The first conflict between our transaction and one winning commit, or null when there is none. */
export function checkConflicts(
  read: ReadSet,
  ours: OurTransaction,
  winner: WinningCommit,
): Conflict | null {
  const w = summarize(winner.actions);
  const conflict = (type: ConflictType, message: string, subject?: string): Conflict => ({
    type,
    winnerVersion: winner.version,
    message: `[delta] concurrent commit ${winner.version} conflicts: ${message}`,
    ...(subject === undefined ? {} : { subject }),
  });

  if (w.hasProtocol) {
    const why = ours.changesProtocol
      ? 'both transactions change the protocol'
      : 'it changed the protocol';
    return conflict('ProtocolChanged', why);
  }
  if (w.hasMetadata)
    return conflict(
      'MetadataChanged',
      'it changed the table metadata (schema, partitioning or properties)',
    );

  const ourDomains = new Set(domainsOf(ours.actions).filter((d) => d !== ROW_TRACKING_DOMAIN));
  const domain = domainsOf(winner.actions).find((d) => ourDomains.has(d));
  if (domain !== undefined)
    return conflict('ConcurrentDomainMetadata', `both wrote domain '${domain}'`, domain);

  const appIds = new Set([...read.appIds, ...txnAppIdsOf(ours.actions)]);
  const appId = w.txnAppIds.find((id) => appIds.has(id));
  if (appId !== undefined) {
    return conflict(
      'ConcurrentTransaction',
      `it committed a txn for appId '${appId}' that this transaction read`,
      appId,
    );
  }

  if (!isSnapshotIsolation(ours.actions)) {
    const added = addedFilesToCheck(w, ours.changesMetadata).find(
      (a) => inReadPartitions(a, read.partitions) && mayHoldKeys(a, read.keyBounds),
    );
    if (added) {
      const where = read.keyBounds?.length
        ? 'in a partition and key range this transaction read'
        : 'in a partition this transaction read';
      return conflict('ConcurrentAppend', `it added ${added.path} ${where}`, added.path);
    }
  }

  const deletedRead = deletedReadFile(w.removes, read);
  if (deletedRead) {
    return conflict(
      'ConcurrentDeleteRead',
      `it removed ${deletedRead.path}, which this transaction read`,
      deletedRead.path,
    );
  }

  const ourRemoves = new Set(removesOf(ours.actions).map((r) => r.path));
  const both = w.removes.find((r) => ourRemoves.has(r.path));
  if (both)
    return conflict('ConcurrentDeleteDelete', `both transactions remove ${both.path}`, both.path);
  return null;
}

interface WinnerSummary {
  hasProtocol: boolean;
  hasMetadata: boolean;
  isBlindAppend: boolean;
  txnAppIds: string[];
  adds: AddFile[];
  removes: RemoveFile[];
}

function summarize(actions: readonly Action[]): WinnerSummary {
  const s: WinnerSummary = {
    hasProtocol: false,
    hasMetadata: false,
    isBlindAppend: false,
    txnAppIds: [],
    adds: [],
    removes: [],
  };
  for (const a of actions) {
    if ('protocol' in a) s.hasProtocol = true;
    else if ('metaData' in a) s.hasMetadata = true;
    else if ('commitInfo' in a) s.isBlindAppend = a.commitInfo['isBlindAppend'] === true;
    else if ('txn' in a) s.txnAppIds.push(a.txn.appId);
    else if ('add' in a) s.adds.push(a.add);
    else if ('remove' in a) s.removes.push(a.remove);
  }
  return s;
}

/**
 * The winner's adds that can conflict with our reads. Only dataChange adds count (compaction
 * output holds rows that were already there). Under WriteSerializable a blind append's adds are
 * ignored unless we change metadata (Spark's rule).
 */
function addedFilesToCheck(w: WinnerSummary, weChangeMetadata: boolean): AddFile[] {
  if (w.isBlindAppend && !weChangeMetadata) return [];
  return w.adds.filter((a) => a.dataChange);
}

/** A transaction whose file actions all have dataChange=false only rearranges data (OPTIMIZE). */
function isSnapshotIsolation(actions: readonly Action[]): boolean {
  let fileActions = 0;
  for (const a of actions) {
    if ('add' in a || 'remove' in a) {
      fileActions++;
      if (('add' in a ? a.add : a.remove).dataChange) return false;
    }
  }
  return fileActions > 0;
}

/**
 * True when the add lands in what we read. A read partition is a conjunction over the columns it
 * names (a partial predicate such as {date: '2024-01-01'} matches every hour of that date).
 */
function inReadPartitions(add: AddFile, partitions: ReadSet['partitions']): boolean {
  if (partitions === 'all') return true;
  return partitions.some((p) =>
    Object.entries(p).every(([k, v]) => sameValue(add.partitionValues[k], v)),
  );
}

/** Partition values compare with '' and missing meaning null (PROTOCOL.md#Partition-Value-Serialization). */
function sameValue(a: string | null | undefined, b: string | null | undefined): boolean {
  const norm = (v: string | null | undefined): string | null =>
    v === undefined || v === '' ? null : v;
  return norm(a) === norm(b);
}

/**
 * A dataChange remove of a file we read. Having read the whole table without key bounds, any
 * dataChange remove counts; with them, `read.files` lists every file that may hold our keys.
 */
function deletedReadFile(removes: RemoveFile[], read: ReadSet): RemoveFile | undefined {
  const changing = removes.filter((r) => r.dataChange);
  const wholeTable = read.partitions === 'all' && !(read.keyBounds && read.keyBounds.length > 0);
  if (wholeTable && changing.length > 0) return changing[0];
  const readFiles = new Set(read.files);
  return changing.find((r) => readFiles.has(r.path));
}

function domainsOf(actions: readonly Action[]): string[] {
  return actions.flatMap((a) => ('domainMetadata' in a ? [a.domainMetadata.domain] : []));
}

function txnAppIdsOf(actions: readonly Action[]): string[] {
  return actions.flatMap((a) => ('txn' in a ? [a.txn.appId] : []));
}

function removesOf(actions: readonly Action[]): RemoveFile[] {
  return actions.flatMap((a) => ('remove' in a ? [a.remove] : []));
}
