/**
 * Running model sequences (./model.ts) as a seeded fast-check property: a fresh landing zone and
 * table per sequence, the table compared with the oracle after every command. A failure prints
 * the seed, the path to replay it, and the shrunk sequence step by step.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { describeStep, sequences, World, type Sequence } from './model.js';

/** Sequences per table kind in `npm test`, and in the soak (TIDEMARK_SOAK=1). */
export const RUNS =
  process.env['TIDEMARK_SOAK'] === '1' ? Number(process.env['TIDEMARK_SOAK_RUNS'] ?? 2500) : 100;
/** TIDEMARK_MODEL_SEED replays one seed (printed by a failure). */
export const SEED = Number(process.env['TIDEMARK_MODEL_SEED'] ?? 19_2026);

const COMMANDS = new Set([
  'run',
  'crash',
  'kill9',
  'backfill',
  'reset',
  'optimize',
  'vacuum',
  'rename',
  'orderBy',
]);

/** Apply `seq` and compare the table with the oracle after each command; throws naming the step. */
export async function check(session: DuckSession, seq: Sequence): Promise<void> {
  const world = await new World(
    session,
    await mkdtemp(path.join(tmpdir(), 'tidemark-model-')),
    seq.table,
  ).open();
  try {
    for (const [i, s] of seq.steps.entries()) {
      await world.apply(s);
      if (!COMMANDS.has(s.kind)) continue;
      const actual = await world.actual();
      const expected = world.oracle.expected();
      if (JSON.stringify(actual) !== JSON.stringify(expected)) {
        throw new Error(
          `after step ${i + 1} (${describeStep(s)}): table ${JSON.stringify(actual)}, the promise ${JSON.stringify(expected)}`,
        );
      }
    }
  } finally {
    await world.dispose();
  }
}

/** Run `runs` sequences of the given table kind; on failure, the seed and the shrunk sequence. */
export async function checkModel(
  session: DuckSession,
  opts: {
    partitioned: boolean;
    runs: number;
    seed: number;
    maxSteps?: number;
    kill9?: boolean;
    mode?: 'merge' | 'append';
  },
): Promise<void> {
  const result = await fc.check(
    fc.asyncProperty(
      sequences({
        partitioned: opts.partitioned,
        maxSteps: opts.maxSteps ?? 8,
        kill9: opts.kill9 ?? false,
        ...(opts.mode ? { mode: opts.mode } : {}),
      }),
      (seq) => check(session, seq),
    ),
    { seed: opts.seed, numRuns: opts.runs, endOnFailure: false },
  );
  if (!result.failed) return;
  const seq = result.counterexample?.[0] as Sequence | undefined;
  const lines = [
    `model test failed: seed ${result.seed} (replay: TIDEMARK_MODEL_SEED=${result.seed}), after ${result.numRuns} sequences, shrunk ${result.numShrinks} times`,
    `table: ${JSON.stringify(seq?.table)}`,
    ...(seq?.steps ?? []).map((s, i) => `  ${i + 1}. ${describeStep(s)}`),
    `error: ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`,
  ];
  expect.fail(lines.join('\n'));
}
