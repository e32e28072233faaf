/**
 * Wall-clock timing for the benchmarks: one measured step, and a stopwatch with laps for the
 * phases of a step. Times are milliseconds from `performance.now()`.
 */
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { readPeakRss, resetPeakRss, type PeakRss } from './peak-rss.js';

/** A measured value, how long it took, and the CPU time the process used meanwhile. */
export interface Timed<T> {
  ms: number;
  /** User + system CPU of the whole process (DuckDB's threads included), in ms. */
  cpuMs: number;
  /** The process's peak resident memory during the step (./peak-rss.ts). */
  peakRss: PeakRss;
  value: T;
}

/**
 * Write out the machine's dirty pages (sync(1)) before a measured step. tidemark flushes its
 * commits and data files (src/storage/local.ts); on ext4 the first flush of a step also writes
 * out whatever else is dirty (a table just copied or rewritten by the step before, another
 * peer's files), which would bill one step for another's writes.
 */
export function flushWrites(): void {
  execFileSync('sync');
}

/** Run `fn` and time it (the machine's writes flushed first: `flushWrites`). */
export async function timed<T>(fn: () => Promise<T>): Promise<Timed<T>> {
  flushWrites();
  const perStep = resetPeakRss();
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await fn();
  const used = process.cpuUsage(cpu);
  return {
    ms: performance.now() - start,
    cpuMs: (used.user + used.system) / 1000,
    peakRss: readPeakRss(perStep),
    value,
  };
}

/** Named laps: each `lap(name)` records the time since the previous lap (or the start). */
export class Laps {
  private last = performance.now();
  private readonly start = this.last;
  readonly phases: Record<string, number> = {};

  /** Close the current phase under `name` (times add up if a name repeats). */
  lap(name: string): void {
    const now = performance.now();
    this.phases[name] = (this.phases[name] ?? 0) + (now - this.last);
    this.last = now;
  }

  /** Time since the stopwatch started. */
  total(): number {
    return performance.now() - this.start;
  }
}

/** Repeated measurements of one step. */
export interface Samples {
  ms: number[];
  median: number;
  min: number;
  max: number;
}

/** Summarize measurements (at least one). */
export function samplesOf(ms: readonly number[]): Samples {
  const sorted = [...ms].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { ms: [...ms], median, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}
