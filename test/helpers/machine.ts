/**
 * Time limits that follow the machine: how much slower than a quiet machine this one runs right
 * now, and limits scaled by it. Tests that loop over real I/O (job runs, CLI processes, DuckDB)
 * bound each step by a limit scaled to the machine, and the test as a whole by its step count
 * times that limit, so a busy machine makes them slower but not red: they fail when a step is
 * really stuck, not because two other processes share the cores.
 *
 * The slowness factor is measured when first asked for and again when the last measurement is
 * older than REMEASURE_MS (test files share a worker process, which lives for the whole run; the
 * config measures once in the main process), clamped to [1, 4], as the larger of:
 * - the run queue per core, `os.loadavg()[0] / os.availableParallelism()` (the minute before);
 * - the CPU share a busy loop gets right now: wall time over CPU time of a 50 ms spin (2 when
 *   twice as many threads want to run as there are cores).
 * `TIDEMARK_TEST_SLOWNESS` overrides the measurement (e.g. `4` on a runner known to be slow);
 * `TIDEMARK_TEST_STEPS=1` prints the time of every step on stderr, to check a limit against.
 */
import os from 'node:os';

const MIN = 1;
const MAX = 4;
const SPIN_NS = 50_000_000n;
const REMEASURE_MS = 30_000;

/** Wall time over CPU time while this thread spins for SPIN_NS: 1 on an idle core. */
function spinContention(): number {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  while (process.hrtime.bigint() - start < SPIN_NS) {
    // Spin: the scheduler decides how much of this time is ours.
  }
  const wallUs = Number(process.hrtime.bigint() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return wallUs / Math.max(1, used.user + used.system);
}

function measure(): number {
  const forced = Number(process.env['TIDEMARK_TEST_SLOWNESS']);
  const raw =
    Number.isFinite(forced) && forced > 0
      ? forced
      : Math.max(os.loadavg()[0]! / os.availableParallelism(), spinContention());
  return Math.round(Math.min(MAX, Math.max(MIN, raw)) * 100) / 100;
}

let measured: { at: number; factor: number } | undefined;

/** How many times slower than a quiet machine this one runs, in [1, 4]; see the module comment. */
function slowness(): number {
  if (!measured || performance.now() - measured.at > REMEASURE_MS)
    measured = { at: performance.now(), factor: measure() };
  return measured.factor;
}

/** `ms`, a limit on a quiet machine, scaled to this one. */
export function scaled(ms: number): number {
  return Math.ceil(ms * slowness());
}

/** A test's timeout: `steps` steps of at most `stepMs` each on a quiet machine, scaled to this one. */
export function stepBudget(steps: number, stepMs: number): number {
  return steps * scaled(stepMs);
}

/**
 * `work()`, failing with an error naming `what` when it takes longer than `stepMs` (a quiet
 * machine's limit) scaled to this machine. `onOverrun` runs first, to stop what is stuck (kill a
 * child process); otherwise the work is left to finish on its own while the test fails.
 */
export async function withinStep<T>(
  what: string,
  stepMs: number,
  work: () => Promise<T>,
  onOverrun?: () => void,
): Promise<T> {
  const factor = slowness();
  const limit = Math.ceil(stepMs * factor);
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onOverrun?.();
      reject(
        new Error(
          `${what} took longer than ${limit} ms (${stepMs} ms on a quiet machine × slowness ${factor}): stuck`,
        ),
      );
    }, limit);
  });
  const started = performance.now();
  try {
    return await Promise.race([work(), overrun]);
  } finally {
    clearTimeout(timer);
    if (process.env['TIDEMARK_TEST_STEPS'])
      process.stderr.write(
        `[step] ${what}: ${Math.round(performance.now() - started)} ms of ${limit}\n`,
      );
  }
}
