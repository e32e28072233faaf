/**
 * The exit code of a command over several jobs is the one that most needs a person.
 */
import { describe, expect, it } from 'vitest';
import {
  EXIT_FAILED,
  EXIT_LOST_RACE,
  EXIT_OK,
  EXIT_STORAGE_UNAVAILABLE,
  EXIT_USAGE,
  worstExitCode,
} from '../../src/cli/exit-codes.js';

describe('worstExitCode', () => {
  it('ranks config (2) over failed (1) over lost race (3) over storage unavailable (4) over done (0)', () => {
    const order = [EXIT_OK, EXIT_STORAGE_UNAVAILABLE, EXIT_LOST_RACE, EXIT_FAILED, EXIT_USAGE];
    for (const [i, a] of order.entries()) {
      for (const [j, b] of order.entries())
        expect(worstExitCode(a, b), `${a} vs ${b}`).toBe(order[Math.max(i, j)]);
    }
  });

  it('a job that needs retrying later does not hide one that needs a person', () => {
    expect([EXIT_STORAGE_UNAVAILABLE, EXIT_USAGE, EXIT_OK].reduce(worstExitCode, EXIT_OK)).toBe(
      EXIT_USAGE,
    );
    expect([EXIT_LOST_RACE, EXIT_STORAGE_UNAVAILABLE].reduce(worstExitCode, EXIT_OK)).toBe(
      EXIT_LOST_RACE,
    );
  });
});
