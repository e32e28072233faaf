/**
 * Exit codes (docs/operations.md, Running from a scheduler): 0 done (also when nothing was new), 1 the run
 * failed, 2 bad usage or config, 3 lost a commit race and gave up after retries, 4 storage
 * unavailable after retries (safe to retry later); 130 for SIGINT/SIGTERM is set by the CLI.
 */
import { TidemarkError } from '../errors.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_LOST_RACE = 3;
export const EXIT_STORAGE_UNAVAILABLE = 4;

/** The exit code an error calls for, read from its class. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof TidemarkError) {
    if (err.kind === 'usage') return EXIT_USAGE;
    if (err.kind === 'conflict') return EXIT_LOST_RACE;
  }
  if (hasTransientCause(err)) return EXIT_STORAGE_UNAVAILABLE;
  return EXIT_FAILED;
}

/**
 * The exit code of a command over several jobs: the one that most needs a person. A config
 * problem (2) or a failed job (1) outranks a lost race (3), which outranks storage that was
 * unavailable (4, retry later): retrying the whole command would not fix the first two.
 */
export function worstExitCode(a: number, b: number): number {
  const rank = (code: number) =>
    [EXIT_OK, EXIT_STORAGE_UNAVAILABLE, EXIT_LOST_RACE, EXIT_FAILED, EXIT_USAGE].indexOf(code);
  return rank(a) >= rank(b) ? a : b;
}

/**
 * A transient error anywhere in the `cause` chain: a wrapper (a log or engine error around a
 * storage fault) does not make a retryable failure permanent. Usage wrappers return above.
 */
function hasTransientCause(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    if (e instanceof TidemarkError && e.kind === 'transient') return true;
  }
  return false;
}
