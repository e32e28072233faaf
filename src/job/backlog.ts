/**
 * How far behind a job is: the files discovery found that are not loaded yet, their bytes, and
 * the oldest one's LastModified (like Auto Loader's numFilesOutstanding / numBytesOutstanding).
 * They are the files of the batches a run has not committed (it stopped or failed after an
 * earlier one: maxFilesPerBatch / maxBytesPerBatch split the plan into commits) and the files
 * waiting for their partition's `_SUCCESS` marker. Each commit records the backlog as of that
 * commit in the job state, so `status` shows it without listing; the run report and the metrics
 * file show it as of the end of the run.
 */
import type { DiscoveryPlan } from '../discovery/index.js';

/** The backlog as the job state records it. */
export interface BacklogState {
  files: number;
  bytes: number;
  /** The oldest LastModified among them (ISO), null when there are none. */
  oldest: string | null;
}

/** The backlog as reports show it. */
export interface Backlog extends BacklogState {
  /** Seconds from the oldest one's LastModified to now (null when there are none). */
  oldestAgeSeconds: number | null;
}

/** Nothing outstanding. */
export const NO_BACKLOG: BacklogState = { files: 0, bytes: 0, oldest: null };

/**
 * The backlog of a plan once `committed` of its batches are loaded: their later batches' files
 * and the files waiting for a marker. Precomputed per batch, so each commit costs nothing.
 */
export class PlanBacklog {
  /** after[i]: the backlog once batches 0..i-1 are committed (after[0]: the whole plan). */
  private readonly after: BacklogState[];

  constructor(
    batches: ReadonlyArray<ReadonlyArray<{ size: number; lastModified: Date }>>,
    waiting: DiscoveryPlan['waiting'],
  ) {
    let tail: BacklogState = waiting.reduce<BacklogState>(
      (b, w) => add(b, w.files, w.bytes, w.since),
      NO_BACKLOG,
    );
    this.after = [tail];
    for (let i = batches.length - 1; i >= 0; i--) {
      for (const f of batches[i]!) tail = add(tail, 1, f.size, f.lastModified);
      this.after.unshift(tail);
    }
  }

  /** The backlog once the first `committed` batches are loaded. */
  once(committed: number): BacklogState {
    return this.after[Math.min(committed, this.after.length - 1)]!;
  }
}

function add(b: BacklogState, files: number, bytes: number, modified: Date): BacklogState {
  const iso = modified.toISOString();
  return {
    files: b.files + files,
    bytes: b.bytes + bytes,
    oldest: b.oldest === null || iso < b.oldest ? iso : b.oldest,
  };
}

/** The recorded backlog (absent in states written before it: unknown, shown as null) as of `now`. */
export function reportBacklog(state: BacklogState, now: Date): Backlog {
  const age =
    state.oldest === null
      ? null
      : Math.max(0, Math.round((now.getTime() - Date.parse(state.oldest)) / 1000));
  return { ...state, oldestAgeSeconds: age };
}
