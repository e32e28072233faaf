/**
 * vitest setup file, run before every test file. Test files share a worker process and its module
 * cache (`isolate: false` in vitest.config.ts: loading DuckDB, the AWS SDK and src/ once per
 * worker, not once per file), so what one file leaves in the process must not reach the next:
 * each file starts with the environment variables, working directory and real timers the worker
 * started with, whatever the file before it set (credentials of its s3rver, a changed cwd, fake
 * timers).
 */
import { vi } from 'vitest';

interface Pristine {
  env: Record<string, string | undefined>;
  cwd: string;
}

// Taken by the first file in this worker (the setup file itself runs again for every file).
const key = Symbol.for('tidemark.test.pristine');
const store = globalThis as typeof globalThis & { [key]?: Pristine };
const pristine = (store[key] ??= { env: { ...process.env }, cwd: process.cwd() });

for (const name of Object.keys(process.env)) if (!(name in pristine.env)) delete process.env[name];
for (const [name, value] of Object.entries(pristine.env))
  if (process.env[name] !== value) process.env[name] = value;
if (process.cwd() !== pristine.cwd) process.chdir(pristine.cwd);
vi.useRealTimers();
