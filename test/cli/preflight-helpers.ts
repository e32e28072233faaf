/**
 * What the fail-loudly and validate tests share: config files written as JSON (which is YAML),
 * small CSV landing zones, a merge job, the one report of a `--json` command.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { CliResult } from '../helpers/cli.js';
import { tempDir } from '../job/helpers.js';

/** A config file in a fresh temp folder (remembered in `dirs`); returns its path. */
export async function configFile(
  dirs: string[],
  config: { jobs: unknown[]; storage?: unknown },
): Promise<string> {
  const dir = await tempDir('cfg', dirs);
  const file = path.join(dir, 'tidemark.yaml');
  await fsp.writeFile(file, JSON.stringify(config, null, 2));
  return file;
}

/** Files of CSV order rows at `keys` below `root` (folders created). */
export async function landCsv(root: string, keys: readonly string[]): Promise<void> {
  let n = 0;
  for (const key of keys) {
    const file = path.join(root, ...key.split('/'));
    await fsp.mkdir(path.dirname(file), { recursive: true });
    n++;
    await fsp.writeFile(
      file,
      `order_id,status,seq,rid\n${n},placed,${n},${path.basename(root)}-${n}\n`,
    );
  }
}

/** A merge job over `source` into `target`, by day unless `discover` says otherwise. */
export function mergeJob(
  source: string,
  target: string,
  discover: Record<string, unknown> = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
  target2: Record<string, unknown> = {},
) {
  return {
    name: 'orders',
    source: { uri: source, discover },
    target: { uri: target, key: ['order_id'], orderBy: 'seq', ...target2 },
  };
}

/** The one JSON report a single-job `--json` command printed. */
export function reportOf(r: CliResult): Record<string, unknown> & {
  error?: { type: string; message: string; context?: Record<string, unknown> };
} {
  const lines = r.stdout.trimEnd().split('\n');
  if (lines.length !== 1) throw new Error(`expected one JSON line on stdout, got:\n${r.stdout}`);
  return JSON.parse(lines[0]!) as ReturnType<typeof reportOf>;
}

/** True when running as root, where file modes do not stop writes. */
export const isRoot = process.getuid?.() === 0;
