/**
 * What a scheduler reads when tidemark fails: the exit code, whether running again may help,
 * and, with --json, one JSON object on stdout also for failures before any job ran (a bad
 * config, an unknown flag).
 */
import { errorInfo } from './output.js';
import type { ReportedError } from '../job/report.js';

/** SIGINT or SIGTERM stopped the command (SPEC §5: 130 interrupted); the rerun is safe. */
export const EXIT_INTERRUPTED = 130;

/** Exit codes after which the same command, run again later, may succeed: 3 lost race, 4 storage unavailable, 130 interrupted. */
const RETRYABLE = new Set([3, 4, EXIT_INTERRUPTED]);

/** True when running the same command again may succeed without a person changing anything. */
export function isRetryable(exitCode: number): boolean {
  return RETRYABLE.has(exitCode);
}

/** The --json object of a command that failed before (or outside) the per-job loop. */
export interface FailureReport {
  runId: string;
  status: 'failed';
  exitCode: number;
  retryable: boolean;
  error: ReportedError;
}

/** The failure report of `err`, which ends the command with `exitCode`. */
export function failureReport(err: unknown, exitCode: number, runId: string): FailureReport {
  return { runId, status: 'failed', exitCode, retryable: isRetryable(exitCode), error: errorInfo(err) };
}

/** The error a report shows for a run stopped by a signal, whatever the abort surfaced as. */
export function interruptedError(signal: AbortSignal): ReportedError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'interrupted';
  return { type: 'Interrupted', message: `${reason}; nothing partial is committed, run it again to continue` };
}
