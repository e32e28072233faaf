/**
 * What a scheduler reads when tidemark fails outside a job's own failure: a run stopped by
 * SIGINT/SIGTERM (exit 130), and, with --json, one JSON object on stdout for a command that failed
 * before any job ran (a bad config, an unknown flag).
 */
import type { ReportedError } from '../job/report.js';
import { errorInfo } from './output.js';

/** SIGINT or SIGTERM stopped the command (130 interrupted: docs/operations.md, Running from a scheduler); the rerun is safe. */
export const EXIT_INTERRUPTED = 130;

/** The --json object of a command that failed before (or outside) the per-job loop. */
export interface FailureReport {
  runId: string;
  status: 'failed';
  exitCode: number;
  /** Whether the same command may succeed later unchanged (as `error.retryable`). */
  retryable: boolean;
  error: ReportedError & { retryable: boolean };
}

/** The failure report of `err`, which ends the command with `exitCode`. */
export function failureReport(err: unknown, exitCode: number, runId: string): FailureReport {
  const error = errorInfo(err);
  return { runId, status: 'failed', exitCode, retryable: error.retryable, error };
}

/** The error a report shows for a run stopped by a signal, whatever the abort surfaced as: retryable, the rerun goes on. */
export function interruptedError(signal: AbortSignal): ReportedError & { retryable: boolean } {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'interrupted';
  return {
    type: 'Interrupted',
    message: `${reason}; nothing partial is committed, run it again to continue`,
    retryable: true,
  };
}

/** The failure report of a command stopped by a signal before any job ran. */
export function interruptedReport(signal: AbortSignal, runId: string): FailureReport {
  return {
    runId,
    status: 'failed',
    exitCode: EXIT_INTERRUPTED,
    retryable: true,
    error: interruptedError(signal),
  };
}
