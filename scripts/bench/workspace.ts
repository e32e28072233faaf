/**
 * Where a benchmark puts its files: a fresh folder under `.bench/` (git-ignored) that is removed
 * when the benchmark ends, fails or is interrupted, unless the user asked to keep it.
 */
import { cp, mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** The repository's benchmark folder; results land here too. */
export const BENCH_ROOT = resolve('.bench');

/** A scratch folder for one benchmark run. */
export interface Workspace {
  dir: string;
  /** A sub-folder path (not created). */
  path(...parts: string[]): string;
  /** Remove the folder (no-op when keeping it). */
  dispose(): Promise<void>;
}

/** Create `.bench/<name>-<pid>`; it is removed on dispose and on SIGINT/SIGTERM unless `keep`. */
export async function openWorkspace(
  name: string,
  opts: { keep?: boolean } = {},
): Promise<Workspace> {
  const dir = join(BENCH_ROOT, `${name}-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const onSignal = (signal: NodeJS.Signals) => {
    if (!opts.keep)
      void rm(dir, { recursive: true, force: true }).finally(() =>
        process.exit(signal === 'SIGINT' ? 130 : 143),
      );
    else process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    dir,
    path: (...parts) => join(dir, ...parts),
    dispose: async () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (!opts.keep) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Copy a folder (a table) so each variant starts from the same bytes. */
export async function copyFolder(from: string, to: string): Promise<void> {
  await cp(from, to, { recursive: true });
}
