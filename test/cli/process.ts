/**
 * The real `tidemark` process for tests: `node <bundle>/bin.js ...` from the repo root, with pipes
 * for stdout and stderr (so neither is a terminal, as under a scheduler). The bundle is
 * src/cli/bin.ts compiled once per test run by the global setup (../helpers/cli-bundle.setup.ts);
 * outside a vitest run with that setup, `node --import tsx src/cli/bin.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

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

/** The CLI entry by absolute path (and tsx's loader without the bundle), so the CLI also starts from another working directory. */
const BUNDLE = inject('cliBundle');
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
/** Node's arguments before the CLI's own: `node ...CLI_ENTRY run --config ...`. */
export const CLI_ENTRY = BUNDLE
  ? [BUNDLE]
  : ['--import', TSX, fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url))];

/** Start the CLI with `args`; `env` is added to the test's environment; `cwd` defaults to the repo root. */
export function spawnCli(args: string[], env: Record<string, string> = {}, cwd = REPO): CliProcess {
  const started = Date.now();
  const child = spawn(process.execPath, [...CLI_ENTRY, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const done = new Promise<CliExit>((resolve) => {
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started }),
    );
  });
  return { child, done };
}

/** Run the CLI to completion. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  cwd = REPO,
): Promise<CliExit> {
  return spawnCli(args, env, cwd).done;
}
