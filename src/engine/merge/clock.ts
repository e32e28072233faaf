/**
 * Time per MERGE phase, for the summary and for commitInfo's operationMetrics.
 */
import type { MergeDurations } from './results.js';

/** Milliseconds per phase. */
export class PhaseClock {
  private readonly start = performance.now();
  private last = this.start;
  private readonly spent: Partial<Record<keyof MergeDurations, number>> = {};

  constructor(private readonly signal?: AbortSignal) {}

  /** Close the current phase under `name`; stop here when the caller aborted. */
  lap(name: Exclude<keyof MergeDurations, 'total'>): void {
    const now = performance.now();
    this.spent[name] = (this.spent[name] ?? 0) + (now - this.last);
    this.last = now;
    this.signal?.throwIfAborted();
  }

  /** For operationMetrics: total so far, scan (prune + classify) and rewrite (write). */
  timings(): { total: number; scan: number; rewrite: number } {
    const s = this.spent;
    return { total: performance.now() - this.start, scan: (s.prune ?? 0) + (s.classify ?? 0), rewrite: s.write ?? 0 };
  }

  durations(): MergeDurations {
    const s = this.spent;
    const round = (x: number | undefined) => Math.round(x ?? 0);
    return {
      prepare: round(s.prepare),
      prune: round(s.prune),
      classify: round(s.classify),
      write: round(s.write),
      total: round(performance.now() - this.start),
    };
  }
}
