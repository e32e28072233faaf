/**
 * The real `tidemark` process for tests: `node --import tsx src/cli/bin.ts ...` from the repo
 * root, with pipes for stdout and stderr (so neither is a terminal, as under a scheduler).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  /** Resolves when the process has exited (never rejects). */
  done: Promise<CliExit>;
}

export interface CliExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Milliseconds from spawn to exit. */
  ms: number;
}

/** tsx's loader and the CLI entry by absolute path, so the CLI also starts from another working directory. */
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
const BIN = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));

/** Start the CLI with `args`; `env` is added to the test's environment; `cwd` defaults to the repo root. */
export function spawnCli(args: string[], env: Record<string, string> = {}, cwd = REPO): CliProcess {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', TSX, BIN, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const done = new Promise<CliExit>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started }));
  });
  return { child, done };
}

/** Run the CLI to completion. */
export function runCli(args: string[], env: Record<string, string> = {}, cwd = REPO): Promise<CliExit> {
  return spawnCli(args, env, cwd).done;
}
