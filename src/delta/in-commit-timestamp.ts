/**
 * In-Commit Timestamps (PROTOCOL.md "In-Commit Timestamps"; docs/delta-protocol.md): while the
 * `inCommitTimestamp` writer feature is listed and `delta.enableInCommitTimestamps` is true, every
 * commit's first action is a commitInfo carrying `inCommitTimestamp`, the larger of the attempt's
 * clock and the previous commit's timestamp + 1 ms, so commit times never go backwards whatever
 * the writers' clocks say. Readers then take a commit's time from it, never from the file.
 * Whether a table writes them is `TableConfig.inCommitTimestamps` (./table-config.ts).
 */
import type { Action } from './actions.js';

/** The timestamp of a commit: `attemptTime`, but at least 1 ms after the previous commit's. */
export function nextInCommitTimestamp(attemptTime: number, previous: number | null): number {
  return previous === null ? attemptTime : Math.max(attemptTime, previous + 1);
}

/** `commitInfo.inCommitTimestamp` of a commit's actions, or null when it has none. */
export function inCommitTimestampOf(actions: readonly Action[]): number | null {
  for (const a of actions) {
    if (!('commitInfo' in a)) continue;
    const ict = a.commitInfo['inCommitTimestamp'];
    return typeof ict === 'number' && Number.isSafeInteger(ict) ? ict : null;
  }
  return null;
}
