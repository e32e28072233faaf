/**
 * The time limits of looping tests: scaled by a factor in [1, 4], and a step that overruns its
 * limit fails naming itself after its overrun hook ran.
 */
import { describe, expect, it } from 'vitest';
import { scaled, stepBudget, withinStep } from './machine.js';

describe('machine-scaled limits', () => {
  it('scale a quiet machine limit by a factor between 1 and 4', () => {
    expect(scaled(1000)).toBeGreaterThanOrEqual(1000);
    expect(scaled(1000)).toBeLessThanOrEqual(4000);
    expect(stepBudget(7, 1000)).toBe(7 * scaled(1000));
  });

  it('hand back what a step returns, and its failure as it is', async () => {
    expect(await withinStep('fast', 1000, async () => 42)).toBe(42);
    await expect(
      withinStep('failing', 1000, async () => Promise.reject(new Error('boom'))),
    ).rejects.toThrow('boom');
  });

  it('fail a stuck step with its name, after running its overrun hook', async () => {
    let stopped = false;
    const stuck = withinStep(
      'day 7',
      5,
      () => new Promise<never>(() => {}),
      () => (stopped = true),
    );
    await expect(stuck).rejects.toThrow(
      /^day 7 took longer than \d+ ms \(5 ms on a quiet machine × slowness [\d.]+\): stuck$/,
    );
    expect(stopped).toBe(true);
  });
});
