/**
 * For the observability and inspection tests: a local landing zone of order files with a config
 * file over it, and the in-process CLI (test/helpers/cli.ts).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { LocalStorage } from '../../src/storage/local.js';
import { land, orders, tempDir, type DuckSession } from '../job/helpers.js';

export { cli } from '../helpers/cli.js';

/** A landing zone with two days of order files (3 rows), and a merge job config over it with `extra` top-level settings. */
export async function orderJob(
  session: DuckSession,
  dirs: string[],
  extra: Record<string, unknown> = {},
): Promise<{ config: string; root: string; target: string }> {
  const root = await tempDir('obs-src', dirs);
  const source = new LocalStorage(root);
  await land(source, session, '2025/05/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
  await land(source, session, '2025/05/02/b.ndjson', orders([1, 'paid', 2]));
  const target = await tempDir('obs-t', dirs);
  const job = {
    name: 'orders',
    source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: { uri: target, key: ['order_id'], orderBy: 'seq' },
    maxFilesPerBatch: 1,
  };
  const config = path.join(await tempDir('obs-cfg', dirs), 'tidemark.yaml');
  await fsp.writeFile(config, JSON.stringify({ ...extra, jobs: [job] }, null, 2));
  return { config, root, target };
}
