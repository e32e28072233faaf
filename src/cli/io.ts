/**
 * What the CLI's commands write to and read from: its streams, the abort signal of SIGINT/SIGTERM,
 * and how a command sets the process's exit code.
 */
import type { RunContext } from '../job/context.js';
import type { Output } from './output.js';

export interface CliIO {
  stdout: Output;
  stderr: NodeJS.WritableStream;
  /** Aborted on SIGINT/SIGTERM. */
  signal?: AbortSignal;
  /** Overrides for tests. */
  context?: Partial<RunContext>;
  /** This invocation's id, in every log line and report (default: a new UUID). */
  runId?: string;
}

/** What the commands need from main: its IO and a way to set the process's exit code. */
export interface CommandHost {
  io: CliIO;
  setExitCode(code: number): void;
}
