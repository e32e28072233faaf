/**
 * vitest global setup: compile the CLI (src/cli/bin.ts) once per test run, for the tests that
 * start the real `tidemark` process (test/cli/process.ts). Under tsx every start compiled or
 * looked up each src module through the loader hooks, about 1.3 s of CPU per process on top of
 * Node, the AWS SDK and DuckDB; the suite starts some hundred processes. The bundle is the same
 * source, built from the working tree at the start of this run (so it is never stale), with
 * packages left to node_modules as in the published package.
 *
 * It goes in a folder of its own directly under node_modules: two levels below the repo root, as
 * src/cli/*.ts are, so `new URL('../../package.json', import.meta.url)` (version.ts, commit.ts)
 * still finds tidemark's package.json, and bare imports resolve to the repo's node_modules.
 * Code splitting keeps bin.ts's dynamic import of main.ts lazy: its signal handlers are in place
 * before the AWS SDK and DuckDB load, as under tsx and in dist/.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  interface ProvidedContext {
    /** Absolute path of the bundled CLI entry (test/cli/process.ts). */
    cliBundle: string;
  }
}

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const outdir = path.join(REPO, 'node_modules', `.tidemark-test-cli-${process.pid}`);
  await build({
    entryPoints: [path.join(REPO, 'src/cli/bin.ts')],
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  project.provide('cliBundle', path.join(outdir, 'bin.js'));
  return () => fsp.rm(outdir, { recursive: true, force: true });
}
