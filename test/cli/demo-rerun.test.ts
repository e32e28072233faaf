/**
 * `npm run demo -- --endpoint URL` twice on one server (README: MinIO from docker-compose.yml):
 * the server keeps the first demo's feed, the table under --dir starts anew. Each demo must tell
 * the same story (6 files, then only the 3 new ones, then nothing). Before, the second demo's
 * first run loaded all 9 files at once and its second run found nothing new, exit 0.
 * A file in s3://landing/orders/ that the demo did not land is refused by name, and nothing is
 * deleted (checked on the function the demo calls).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, tempDir } from '../job/helpers.js';
import { scaled } from '../helpers/machine.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { S3Storage } from '../../src/storage/s3.js';
import { S3RVER_CREDENTIALS } from '../../scripts/lib/embedded-s3.js';
import { clearEarlierFeed } from '../../scripts/lib/orders-feed.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
let s3: S3rverHandle;

beforeAll(async () => {
  s3 = await startS3rver('landing');
});
afterAll(async () => {
  await s3.stop();
  await cleanup(dirs);
});

async function demo(): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = await tempDir('demo', dirs);
  const env = {
    ...process.env,
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    AWS_REGION: s3.region,
  };
  const args = ['--import', 'tsx', 'scripts/demo.ts', '--endpoint', s3.endpoint, '--dir', dir];
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd: REPO, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The `files:` line of each `tidemark run` the demo printed. */
const fileLines = (stdout: string): string[] =>
  stdout.split('\n').filter((l) => l.trimStart().startsWith('files:'));

describe('the demo on a server that keeps its files', () => {
  it(
    'tells the same story the second time',
    async () => {
      const story = [
        '  files: 6 discovered, 6 loaded in 1 batch',
        '  files: 3 discovered, 3 loaded in 1 batch',
        '  files: 0 discovered, 0 loaded in 0 batches',
      ];
      const first = await demo();
      expect(first.code, first.stderr).toBe(0);
      expect(fileLines(first.stdout)).toEqual(story);
      const second = await demo();
      expect(second.code, second.stderr).toBe(0);
      expect(fileLines(second.stdout)).toEqual(story);
      expect(second.stdout).toContain(
        'removed 9 files an earlier demo landed in s3://landing/orders/',
      );
    },
    scaled(120_000),
  );

  // The check itself, in process (a third demo process would cost about 7 s of CPU): the first
  // test above shows the demo calls it on its landing prefix.
  it('refuses a landing prefix holding files of its own, deleting nothing', async () => {
    const landing = new S3Storage({ bucket: 'landing', prefix: 'orders/', client: s3.client });
    await landing.write('2026/01/01/real-orders.csv', 'id\n1\n');
    await landing.write('2026/01/01/orders-1.parquet', "not the demo's either way");
    await expect(clearEarlierFeed(landing, 's3://landing/orders/')).rejects.toThrow(
      /holds 1 files the demo did not land \(2026\/01\/01\/real-orders\.csv\)/,
    );
    expect(await landing.head('2026/01/01/real-orders.csv')).not.toBeNull();
    expect(await landing.head('2026/01/01/orders-1.parquet')).not.toBeNull();
  });
});
