/**
 * What a run reports: one object per job, printed as JSON with `--json` (SPEC §5).
 */

export type RunStatus = 'succeeded' | 'nothing-new' | 'failed' | 'dry-run';

export interface SkippedFile {
  key: string;
  reason: string;
}

/** What loading did, counted the same way by a run and a backfill. */
export interface LoadCounts {
  filesLoaded: number;
  rowsRead: number;
  rowsAfterDedupe: number;
  inserted: number;
  updated: number;
  deleted: number;
  skippedStale: number;
}

export interface RunReport extends LoadCounts {
  job: string;
  status: RunStatus;
  filesDiscovered: number;
  /** Table version after the run (unchanged when nothing was committed; null when no table yet). */
  tableVersion: number | null;
  /** The committed watermark after the run (partition or ISO timestamp), null before the first load. */
  watermark: string | null;
  durationMs: number;
  /** Commits made by this run (one per batch). */
  commits: number;
  batches: number;
  partitionsListed?: string[];
  /** With --dry-run: the watermark the run would commit. */
  watermarkAfter?: string | null;
  /** With --dry-run: the files that would load. */
  plannedFiles?: string[];
  /** Files skipped, with the reason (dry-run shows all; a normal run shows counts by reason). */
  skipped?: SkippedFile[];
  skippedByReason?: Record<string, number>;
  quarantined?: SkippedFile[];
  error?: { type: string; message: string; context?: Record<string, unknown> };
}

export interface StatusReport {
  job: string;
  discovery: 'partition' | 'modified';
  watermark: string | null;
  tableVersion: number | null;
  lastRunAt: string | null;
  rows: number | null;
  files: number;
  bytes: number;
  quarantined: Array<{ key: string; error: string; at: string }>;
  /** The job's latest backfill (`tidemark backfill`), absent when it never had one. */
  backfill?: { from: string; to: string; status: 'running' | 'done'; doneThrough: string | null; updatedAt: string };
}

/** A report with every counter at zero. */
export function emptyReport(job: string): RunReport {
  return {
    job,
    status: 'nothing-new',
    filesDiscovered: 0,
    filesLoaded: 0,
    rowsRead: 0,
    rowsAfterDedupe: 0,
    inserted: 0,
    updated: 0,
    deleted: 0,
    skippedStale: 0,
    tableVersion: null,
    watermark: null,
    durationMs: 0,
    commits: 0,
    batches: 0,
  };
}
