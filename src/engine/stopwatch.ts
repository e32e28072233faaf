/**
 * Time per named phase: the one timer behind a run's phases (../job/phases.ts) and a write's
 * (./merge/results.ts, `WRITE_PHASES`). A phase is timed around a call (`time`), or closed at a
 * point of a straight-line function (`lap`: the time since the previous lap, or the start).
 */
export class Stopwatch<P extends string> {
  private readonly start = performance.now();
  private last = this.start;
  private readonly spentMs: Record<P, number>;

  /** With `signal`, a lap stops the caller there once it is aborted. */
  constructor(
    private readonly phases: readonly P[],
    private readonly signal?: AbortSignal,
  ) {
    this.spentMs = Object.fromEntries(phases.map((p) => [p, 0])) as Record<P, number>;
  }

  /** Run `fn`, adding its duration (also when it fails) to `phase`. */
  async time<T>(phase: P, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.add(phase, performance.now() - started);
    }
  }

  /** Add `ms` to `phase` (for durations measured elsewhere). */
  add(phase: P, ms: number): void {
    this.spentMs[phase] += ms;
  }

  /** Close the current phase under `phase`; stop here when the caller aborted. */
  lap(phase: P): void {
    const now = performance.now();
    this.add(phase, now - this.last);
    this.last = now;
    this.signal?.throwIfAborted();
  }

  /** Milliseconds spent in `phase` so far, unrounded. */
  spent(phase: P): number {
    return this.spentMs[phase];
  }

  /** Milliseconds since the stopwatch was made, unrounded. */
  elapsed(): number {
    return performance.now() - this.start;
  }

  /** The totals so far, rounded to whole milliseconds. */
  timings(): Record<P, number> {
    return Object.fromEntries(this.phases.map((p) => [p, Math.round(this.spentMs[p])])) as Record<
      P,
      number
    >;
  }
}
