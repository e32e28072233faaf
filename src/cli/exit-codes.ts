/**
 * Exit codes (SPEC §5): 0 done (also when nothing was new), 1 the run failed,
 * 2 bad usage or config, 3 lost a commit race and gave up after retries.
 */
import { TidemarkError } from '../errors.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_LOST_RACE = 3;

/** The exit code an error calls for, read from its class. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof TidemarkError) {
    if (err.kind === 'usage') return EXIT_USAGE;
    if (err.kind === 'conflict') return EXIT_LOST_RACE;
  }
  return EXIT_FAILED;
}
