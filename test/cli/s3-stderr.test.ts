/**
 * What a scheduler captures from an S3 run of the real CLI process: on stderr the JSON log lines
 * and nothing else. A run that reads more than ten objects at once (the default
 * source.concurrency is 16) printed Node's MaxListenersExceededWarning ("possible EventTarget
 * memory leak detected") there, once per run, from the listeners each read puts on the run's
 * abort signal (src/cli/bin.ts).
 */
import path from 'node:path';
import { promises as fsp } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { closeS3JobEnv, DuckSession, land, openS3JobEnv, orders, tempDir } from '../job/helpers.js';
import { runCli } from './process.js';

let session: DuckSession;
let s3: S3rverHandle;
const dirs: string[] = [];

// The child process inherits the s3rver credentials openS3JobEnv puts in the environment.
beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

describe('stderr of an S3 run', () => {
  it('40 files fetched 16 at a time: exit 0, every file loaded, and stderr holds JSON log lines only (no Node warning)', async () => {
    const { source, uri, storageConfig: storage } = s3.landingZone('stderr-src');
    for (let i = 0; i < 40; i++)
      await land(source, session, `2025/04/01/f${i}.csv`, orders([i, 'placed', 1]));
    const config = path.join(await tempDir('stderr-cfg', dirs), 'tidemark.yaml');
    const job = {
      name: 'orders',
      source: { uri, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { uri: await tempDir('stderr-t', dirs), key: ['order_id'], orderBy: 'seq' },
    };
    await fsp.writeFile(config, JSON.stringify({ storage, jobs: [job] }));

    const run = await runCli(['run', '--config', config, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'succeeded', filesLoaded: 40 });
    const notJson = run.stderr.split('\n').filter((line) => {
      if (line === '') return false;
      try {
        JSON.parse(line);
        return false;
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
  });
});
