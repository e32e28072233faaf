/**
 * Small helpers every test file used to write for itself: the CLI run in process with its output
 * captured, an expected failure, and a pause.
 */
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/io.js';
import type { RunContext } from '../../src/job/context.js';

/** What one in-process CLI run printed and returned. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout and stderr as one text, in the order written (for "no secret anywhere" checks). */
  out: string;
}

/** Run `tidemark <argv>` in this process, capturing stdout and stderr; `context` overrides the run context; `signal` stands for SIGINT/SIGTERM. */
export async function cli(
  argv: string[],
  context?: Partial<RunContext>,
  signal?: AbortSignal,
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  let out = '';
  const err = new PassThrough();
  err.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    out += chunk.toString('utf8');
  });
  const write = (s: string) => {
    stdout += s;
    out += s;
  };
  const io: CliIO = {
    stdout: { write },
    stderr: err,
    ...(context ? { context } : {}),
    ...(signal ? { signal } : {}),
  };
  const code = await main(argv, io);
  await new Promise((resolve) => setImmediate(resolve)); // let the logger's stream drain
  return { code, stdout, stderr, out };
}

/** The error `p` rejects with; fails the test when it resolves. */
export async function failure<E = Error>(p: Promise<unknown>): Promise<E> {
  try {
    await p;
  } catch (err) {
    return err as E;
  }
  throw new Error('expected a failure, but it succeeded');
}

/** Wait `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));
