/**
 * Where a run's time goes, per phase, summed over its batches: what the run report shows and
 * what the benchmark reads (it times the real job, not a copy of it).
 */

/** The phases of a run, in the order data goes through them. */
export const PHASES = ['list', 'fetch', 'load', 'dedupe', 'merge', 'commit'] as const;

export type Phase = (typeof PHASES)[number];

/** Milliseconds per phase. */
export type PhaseTimings = Record<Phase, number>;

/** Adds up the time spent in each phase. */
export class PhaseTimer {
  private readonly spent: PhaseTimings = { list: 0, fetch: 0, load: 0, dedupe: 0, merge: 0, commit: 0 };

  /** Run `fn`, adding its duration (also when it fails) to `phase`. */
  async time<T>(phase: Phase, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.add(phase, performance.now() - started);
    }
  }

  /** Add `ms` to `phase` (for durations measured elsewhere). */
  add(phase: Phase, ms: number): void {
    this.spent[phase] += ms;
  }

  /** The totals so far, rounded to whole milliseconds. */
  timings(): PhaseTimings {
    return Object.fromEntries(PHASES.map((p) => [p, Math.round(this.spent[p])])) as PhaseTimings;
  }
}
