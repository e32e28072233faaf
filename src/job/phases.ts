/**
 * Where a run's time goes, per phase, summed over its batches: what the run report shows and
 * what the benchmark reads (it times the real job, not a copy of it).
 */
import { Stopwatch } from '../engine/stopwatch.js';

/** The phases of a run, in the order data goes through them. */
export const PHASES = ['list', 'fetch', 'load', 'dedupe', 'merge', 'commit'] as const;

export type Phase = (typeof PHASES)[number];

/** Milliseconds per phase. */
export type PhaseTimings = Record<Phase, number>;

/** Adds up the time spent in each phase of a run. */
export class PhaseTimer extends Stopwatch<Phase> {
  constructor() {
    super(PHASES);
  }
}
