/**
 * What the CLI prints on stdout: one JSON object per job per line with --json, else a short
 * human summary. Logs never go to stdout.
 */
import prettyBytes from 'pretty-bytes';
import { redactText, redactValue } from '../log/redact.js';
import { TidemarkError } from '../errors.js';
import { EXIT_STORAGE_UNAVAILABLE, exitCodeFor } from './exit-codes.js';
import type {
  BackfillStatusReport,
  RunReport,
  StatusReport,
  WaitingForMarker,
} from '../job/report.js';

export interface Output {
  write(text: string): void;
}

/** One JSON line. A bigint is written as a number (its text when beyond 2^53), never a TypeError in place of the report. */
export function printJson(out: Output, value: unknown): void {
  out.write(
    JSON.stringify(redactValue(value), (_k, v: unknown) =>
      typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v,
    ) + '\n',
  );
}

/**
 * The error as it appears in a report: class, message, context (all redacted), and whether a
 * later run may succeed (`retryable`: exactly when the exit code is 4, storage unavailable).
 */
export function errorInfo(err: unknown): NonNullable<RunReport['error']> & { retryable: boolean } {
  const retryable = exitCodeFor(err) === EXIT_STORAGE_UNAVAILABLE;
  if (err instanceof TidemarkError) {
    return {
      ...redactValue({ type: err.name, message: err.message, context: { ...err.context } }),
      retryable,
    };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  return { type: e.name, message: redactText(e.message), retryable };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : word.endsWith('h') ? 'es' : 's'}`;
}

/** A few human lines for one run. */
export function formatRun(r: RunReport): string {
  const head = `${r.job}: ${r.status}`;
  if (r.status === 'failed') return `${head}: ${r.error?.message ?? 'unknown error'}\n`;
  const lines = [
    `${head} in ${(r.durationMs / 1000).toFixed(1)}s; table version ${r.tableVersion ?? '-'}, watermark ${r.watermark ?? '-'}`,
    `  files: ${r.filesDiscovered} discovered, ${r.filesLoaded} loaded in ${plural(r.batches, 'batch')}`,
    `  rows: ${r.rowsRead} read, ${r.rowsAfterDedupe} after dedupe; ${r.inserted} inserted, ${r.updated} updated, ${r.deleted} deleted, ${r.skippedStale} stale skipped`,
  ];
  if (r.commits > 0) {
    const dv =
      r.filesWithNewDeletionVector > 0
        ? `, ${plural(r.filesWithNewDeletionVector, 'file')} given a deletion vector`
        : '';
    lines.push(
      `  table files: ${r.dataFilesAdded} added, ${r.dataFilesRemoved} removed${dv}; ${prettyBytes(r.bytesWritten, { binary: true })} written`,
    );
  }
  const reasons = Object.entries(r.skippedByReason ?? {});
  if (reasons.length > 0)
    lines.push(`  skipped: ${reasons.map(([why, n]) => `${n} ${why}`).join(', ')}`);
  const quarantined = r.quarantined ?? [];
  if (quarantined.length > 0)
    lines.push(
      `  quarantined (${quarantined.length}):`,
      ...quarantined.map((q) => `    ${q.key}: ${q.reason}`),
    );
  lines.push(...waitingLines(r.waitingForMarker ?? []));
  if (r.cleanup) {
    const verb = r.cleanup.action === 'move' ? 'moved' : 'deleted';
    lines.push(
      `  cleanup: ${r.cleanup.status}, ${verb} ${plural(r.cleanup.files, 'source file')} (${prettyBytes(r.cleanup.bytes, { binary: true })})${r.cleanup.record ? `, recorded in ${r.cleanup.record}` : ''}`,
    );
    for (const l of r.cleanup.left) lines.push(`    left ${l.key}: ${l.reason}`);
  }
  if (r.status === 'dry-run') {
    lines.push(
      `  would load (${r.plannedFiles?.length ?? 0}):`,
      ...(r.plannedFiles ?? []).map((k) => `    + ${k}`),
    );
    for (const s of r.skipped ?? []) lines.push(`    - ${s.key}: ${s.reason}`);
    lines.push(`  watermark after: ${r.watermarkAfter ?? '-'}`);
  } else {
    // A run lists only what it could not load and will try again, not every file already loaded.
    for (const s of r.skipped ?? []) lines.push(`    - ${s.key}: ${s.reason}`);
  }
  return lines.join('\n') + '\n';
}

/** Partitions waiting for their success marker: one line each. */
function waitingLines(waiting: readonly WaitingForMarker[]): string[] {
  if (waiting.length === 0) return [];
  return [
    `  waiting for _SUCCESS (${waiting.length}; the watermark stays before ${waiting[0]!.partition}):`,
    ...waiting.map(
      (w) =>
        `    ${w.partition}: ${w.files} files since ${w.since}${w.overdue ? ' (overdue: longer than discover.markerTimeout)' : ''}`,
    ),
  ];
}

/** The status lines of a backfill: one, plus one per shard when it is split. */
function backfillLines(b: BackfillStatusReport): string[] {
  if (!b.shards)
    return [
      `  backfill ${b.from}..${b.to}: ${b.status === 'done' ? 'done' : `running, done through ${b.doneThrough ?? '-'}`} (${b.updatedAt})`,
    ];
  const done = b.shards.filter((s) => s.status === 'done').length;
  const head = `  backfill ${b.from}..${b.to} in ${b.shards.length} shards: ${b.status === 'done' ? 'done' : `${done} of ${b.shards.length} shards done`} (${b.updatedAt})`;
  return [
    head,
    ...b.shards.map((s) => {
      const part = s.part ? `${s.part.from}..${s.part.to}` : '(empty slice)';
      const where =
        s.status === 'running' ? `running, done through ${s.doneThrough ?? '-'}` : s.status;
      return `    shard ${s.shard} ${part}: ${where}; ${s.filesLoaded} files, ${s.rowsLoaded} rows (${s.updatedAt ?? 'not started'})`;
    }),
  ];
}

/** A few human lines for one job's status, or what went wrong. */
export function formatStatus(s: StatusReport & { error?: { message?: string } }): string {
  // A status that could not read the table knows nothing of it: never "last run: never, 0 rows".
  if (s.error) return `${s.job}: status failed: ${s.error.message ?? 'unknown error'}\n`;
  const lines = [
    `${s.job} (${s.discovery} discovery)`,
    `  watermark: ${s.watermark ?? '-'}   last run: ${s.lastRunAt ?? 'never'}`,
    `  table: version ${s.tableVersion ?? '-'}, ${s.files} files, ${(s.bytes / 1024 / 1024).toFixed(1)} MiB, ${s.rows ?? '?'} rows`,
  ];
  if (s.backfill) lines.push(...backfillLines(s.backfill));
  if (s.quarantined.length > 0) {
    lines.push(
      `  quarantined (${s.quarantined.length}):`,
      ...s.quarantined.map((q) => `    ${q.key}: ${q.error}`),
    );
  }
  lines.push(...waitingLines(s.waitingForMarker));
  return lines.join('\n') + '\n';
}
