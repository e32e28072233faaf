/**
 * The CLI in process for the observability tests: a local landing zone of order files, a config
 * file, and `main()` with stdout and stderr captured.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { LocalStorage } from '../../src/storage/local.js';
import { land, orders, tempDir, type DuckSession } from '../job/helpers.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI in process (stderr gets JSON log lines, as off a terminal). */
export async function cli(argv: string[], runId?: string, tty = false): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const err = new PassThrough();
  err.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await main(argv, { stdout: { write: (s) => void (stdout += s) }, stderr: err, context: { tty }, ...(runId ? { runId } : {}) });
  await new Promise((resolve) => setImmediate(resolve)); // let the logger's stream drain
  return { code, stdout, stderr };
}

/** A landing zone with two days of order files (3 rows), and a merge job config over it with `extra` top-level settings. */
export async function orderJob(session: DuckSession, dirs: string[], extra: Record<string, unknown> = {}): Promise<{ config: string; root: string; target: string }> {
  const root = await tempDir('obs-src', dirs);
  const source = new LocalStorage(root);
  await land(source, session, '2025/05/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
  await land(source, session, '2025/05/02/b.ndjson', orders([1, 'paid', 2]));
  const target = await tempDir('obs-t', dirs);
  const job = { name: 'orders', source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } }, target: { uri: target, key: ['order_id'], orderBy: 'seq' }, maxFilesPerBatch: 1 };
  const config = path.join(await tempDir('obs-cfg', dirs), 'tidemark.yaml');
  await fsp.writeFile(config, JSON.stringify({ ...extra, jobs: [job] }, null, 2));
  return { config, root, target };
}
