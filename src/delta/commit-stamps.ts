/**
 * What table features stamp on each commit attempt, because it depends on the version the attempt
 * writes and on the commits before it: fresh row ids and their high-water mark (./row-tracking.ts)
 * and the in-commit timestamp (./in-commit-timestamp.ts). After a lost race the commit loop hands
 * the winners over, and the next attempt counts from their mark and timestamp: a retry never
 * reuses the row ids or the timestamp of an attempt that lost.
 */
import type { Storage } from '../storage/storage.js';
import type { Action, CommitInfo } from './actions.js';
import { inCommitTimestampOf, nextInCommitTimestamp } from './in-commit-timestamp.js';
import { commitKey } from './log-files.js';
import { assignRowIds, highWaterMarkAfter, PRESERVED_TAG } from './row-tracking.js';

/** The features a commit must honour, with their state at the commit's read version. */
export interface CommitFeatures {
  /** Row tracking: new adds get row ids counted from this mark (-1: none assigned yet). */
  rowIds?: {
    highWaterMark: number;
    /** commitInfo.tags `delta.rowTracking.preserved`: every updated or copied row kept its stable id and version. */
    preserved: boolean;
  };
  /** In-commit timestamps: the read version's timestamp (null when creating the table). */
  inCommitTimestamp?: { previous: number | null };
}

/** One attempt's actions and the commitInfo fields the features add. */
export interface StampedAttempt {
  actions: Action[];
  commitInfo: CommitInfo;
}

/** The features' state across the attempts of one commit. */
export class CommitStamps {
  private highWaterMark: number | null;
  private previousTimestamp: number | null;
  /** An in-commit timestamp keeps the first attempt's clock, only raised above the winners' (Spark's rule). */
  private readonly attemptTime: number;

  constructor(
    private readonly features: CommitFeatures,
    now: () => number,
  ) {
    this.highWaterMark = features.rowIds?.highWaterMark ?? null;
    this.previousTimestamp = features.inCommitTimestamp?.previous ?? null;
    this.attemptTime = now();
  }

  /** The request's actions and commitInfo fields for an attempt at `version`. */
  forVersion(actions: readonly Action[], version: number, uri: string): StampedAttempt {
    const commitInfo: CommitInfo = {};
    let stamped = [...actions];
    if (this.features.rowIds && this.highWaterMark !== null) {
      stamped = assignRowIds(actions, { version, highWaterMark: this.highWaterMark, uri }).actions;
      commitInfo['tags'] = { [PRESERVED_TAG]: String(this.features.rowIds.preserved) };
    }
    if (this.features.inCommitTimestamp) {
      const ict = nextInCommitTimestamp(this.attemptTime, this.previousTimestamp);
      // Spark 4.1 writes the same value as commitInfo.timestamp.
      commitInfo['timestamp'] = ict;
      commitInfo['inCommitTimestamp'] = ict;
    }
    return { actions: stamped, commitInfo };
  }

  /** Learn the row-id mark and the timestamp of a commit that won a version this commit wanted. */
  async learnFrom(
    winner: { version: number; actions: readonly Action[] },
    storage: Storage,
  ): Promise<void> {
    if (this.highWaterMark !== null)
      this.highWaterMark = highWaterMarkAfter(winner.actions, this.highWaterMark);
    if (this.features.inCommitTimestamp) {
      // A winner without one was written by a writer ignoring the feature: its file time stands in.
      const ict =
        inCommitTimestampOf(winner.actions) ??
        (await storage.head(commitKey(winner.version)))?.lastModified.getTime() ??
        null;
      if (ict !== null) this.previousTimestamp = Math.max(this.previousTimestamp ?? ict, ict);
    }
  }
}
