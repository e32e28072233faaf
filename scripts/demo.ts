/**
 * `npm run demo`: tidemark end to end on an embedded S3-compatible server.
 *
 * 1. starts s3rver on 127.0.0.1 (random port) with a `landing` bucket;
 * 2. lands three days of an orders feed in {yyyy}/{mm}/{dd} folders: Parquet and CSV, the same
 *    orders changing status across days, duplicate rows within a day;
 * 3. runs the job into a local Delta table and prints the run summary and `status`;
 * 4. lands today's files plus a late file in an earlier day, runs again: only those load;
 * 5. runs a third time: nothing new, nothing committed;
 * 6. prints a few rows: the latest status per order won.
 *
 * With `--endpoint http://127.0.0.1:9000` it uses that server instead (MinIO from
 * docker-compose.yml; credentials from the usual AWS environment variables).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { main } from '../src/cli/main.js';
import { openTable, scanSource } from './lib/tables.js';
import { DuckSession } from '../src/engine/duckdb.js';
import { withTableScan } from '../src/engine/scan.js';
import { LocalStorage } from '../src/storage/local.js';
import { S3Storage } from '../src/storage/s3.js';
import { startEmbeddedS3, type EmbeddedS3 } from './lib/embedded-s3.js';
import { buildDay, clearEarlierFeed, type DayFile } from './lib/orders-feed.js';

process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';

const { values: flags } = parseArgs({
  options: { endpoint: { type: 'string' }, dir: { type: 'string', default: '.demo' } },
});
const demoDir = resolve(flags.dir!);
const tableDir = join(demoDir, 'warehouse', 'orders');
const configPath = join(demoDir, 'tidemark.yaml');

function day(offset: number): Date {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() + offset);
  return d;
}

function heading(text: string): void {
  process.stdout.write(`\n\x1b[1m== ${text}\x1b[0m\n`);
}

async function tidemark(...args: string[]): Promise<number> {
  process.stdout.write(`$ tidemark ${args.join(' ')}\n`);
  const code = await main([...args, '--config', configPath, '--log-level', 'warn'], {
    stdout: process.stdout,
    stderr: process.stderr,
  });
  if (code !== 0) throw new Error(`tidemark ${args[0]} exited with ${code}`);
  return code;
}

async function land(storage: S3Storage, files: DayFile[]): Promise<void> {
  for (const f of files) {
    await storage.write(f.key, f.body);
    process.stdout.write(`  landed s3://landing/orders/${f.key} (${f.rows} rows)\n`);
  }
}

async function showRows(session: DuckSession): Promise<void> {
  const table = openTable(new LocalStorage(tableDir), session);
  const snapshot = await table.snapshot();
  if (!snapshot) return;
  const rows = await withTableScan(session, scanSource(table.storage), snapshot, (relation) =>
    session.allJson(
      `SELECT order_id::INTEGER AS order_id, status, strftime(updated_at, '%Y-%m-%d %H:%M') AS updated_at, amount::DOUBLE AS amount, _source_file ` +
        `FROM (${relation}) WHERE order_id IN (1, 2, 3, 7, 42) ORDER BY order_id`,
    ),
  );
  console.table(rows);
  const [count] = await withTableScan(session, scanSource(table.storage), snapshot, (relation) =>
    session.allJson(
      `SELECT count(*) AS rows, count(DISTINCT order_id) AS orders FROM (${relation})`,
    ),
  );
  process.stdout.write(
    `table ${tableDir}: ${count?.['rows']} rows for ${count?.['orders']} orders (one row per order)\n`,
  );
}

async function run(): Promise<void> {
  await rm(demoDir, { recursive: true, force: true });
  await mkdir(demoDir, { recursive: true });
  let server: EmbeddedS3 | null = null;
  let endpoint = flags.endpoint;
  if (!endpoint) {
    server = await startEmbeddedS3({ buckets: ['landing'] });
    endpoint = server.endpoint;
    // s3rver's fixed, public test keys, through the standard AWS environment variables.
    process.env['AWS_ACCESS_KEY_ID'] = server.credentials.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = server.credentials.secretAccessKey;
    process.env['AWS_REGION'] = server.region;
    process.stdout.write(`embedded S3 (s3rver) listening on ${endpoint}\n`);
  }
  const landing = new S3Storage({
    bucket: 'landing',
    prefix: 'orders/',
    endpoint,
    region: process.env['AWS_REGION'] ?? 'us-east-1',
    forcePathStyle: true,
  });
  const session = await DuckSession.open();
  try {
    await writeFile(
      configPath,
      [
        'storage:',
        `  endpoint: ${endpoint}`,
        `  region: ${process.env['AWS_REGION'] ?? 'us-east-1'}`,
        '  forcePathStyle: true',
        'jobs:',
        '  - name: orders',
        '    source:',
        '      uri: s3://landing/orders/',
        '      discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", lookback: 2 }',
        '    target:',
        `      uri: ${tableDir}`,
        '      key: [order_id]',
        '      orderBy: updated_at',
        '',
      ].join('\n'),
    );
    process.stdout.write(`config: ${configPath}\n`);
    // The table starts anew under demoDir; so must the feed, or a rerun on a server that kept
    // the last demo's files loads them all at once and the story below does not happen.
    const cleared = await clearEarlierFeed(landing, 's3://landing/orders/');
    if (cleared > 0)
      process.stdout.write(
        `removed ${cleared} files an earlier demo landed in s3://landing/orders/\n`,
      );

    heading('Day -3 .. day -1 land (Parquet and CSV, status changes, duplicates)');
    for (const offset of [-3, -2, -1])
      await land(landing, await buildDay(session, day(offset), offset + 4));
    heading('First run: the initial load');
    await tidemark('run');
    await tidemark('status');

    heading("Today's files land, plus a late file in day -2");
    await land(landing, await buildDay(session, day(0), 4));
    await land(landing, await buildDay(session, day(-2), 5, { late: true }));
    heading('Second run: only the new and the late file load');
    await tidemark('run');

    heading('Third run: nothing new, no commit');
    await tidemark('run');
    await tidemark('status');

    heading('A few rows: the latest status per order won');
    await showRows(session);
  } finally {
    session.close();
    landing.client.destroy();
    await server?.stop();
  }
}

await run();
