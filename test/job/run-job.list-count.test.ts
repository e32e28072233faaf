/**
 * The job's LIST requests against the source (s3rver, counted through the RunContext's
 * `openStorage` seam): once a year of daily partitions is loaded, an incremental run
 * lists the new and lookback partitions only, as many requests as with ten days of history.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StorageOpener } from '../../src/job/open.js';
import { openStorage } from '../../src/storage/uri.js';
import { countingStorage, type CountingStorage } from '../helpers/counting-storage.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  DuckSession,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  readTarget,
  run,
  tempDir,
} from './helpers.js';

const DAY_MS = 86_400_000;
let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

/** One small CSV per day from `first` to `last` (inclusive) in `{yyyy}/{mm}/{dd}/` folders below `prefix`. */
function days(prefix: string, first: string, last: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let ms = Date.parse(first); ms <= Date.parse(last); ms += DAY_MS) {
    const day = new Date(ms).toISOString().slice(0, 10);
    out.push([
      `${prefix}${day.replaceAll('-', '/')}/part-0.csv`,
      `order_id,status,seq,rid\n${ms / DAY_MS},placed,1,${day}\n`,
    ]);
  }
  return out;
}

/** Load the history, land three new days, and count the incremental run's source LISTs. */
async function incrementalAfter(historyStart: string) {
  const prefix = `landing-${randomUUID()}/`;
  await s3.seedObjects(days(prefix, historyStart, '2025-06-10'));
  let source: CountingStorage | undefined;
  const sourceUri = `s3://${s3.bucket}/${prefix}`;
  const counting: StorageOpener = (uri, opts) => {
    const storage = openStorage(uri, opts);
    if (uri !== sourceUri) return storage;
    source = countingStorage(storage);
    return source;
  };
  const setup = makeConfig(
    {
      source: {
        uri: sourceUri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 },
      },
      target: mergeTarget(await tempDir('t', dirs)),
      maxFilesPerBatch: 5000,
    },
    { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true },
  );
  const initial = await run(setup, { openStorage: counting });
  const initialLists = source!.counts.list;
  await s3.seedObjects(days(prefix, '2025-06-11', '2025-06-13'));
  const incremental = await run(setup, { openStorage: counting });
  return { initial, initialLists, incremental, lists: source!.counts.list, setup };
}

describe('LIST requests of an incremental job run (sources on s3rver)', () => {
  it('depend on the new and lookback partitions, not on a year of loaded history', async () => {
    const long = await incrementalAfter('2024-06-11'); // a year: 365 days, across a year's end
    const short = await incrementalAfter('2025-06-01'); // ten days
    expect(long.initial).toMatchObject({
      status: 'succeeded',
      filesLoaded: 365,
      watermark: '2025-06-10',
    });
    expect(short.initial).toMatchObject({
      status: 'succeeded',
      filesLoaded: 10,
      watermark: '2025-06-10',
    });
    expect(long.initialLists).toBeGreaterThan(365); // the first run walks every day

    for (const r of [long, short]) {
      expect(r.incremental).toMatchObject({
        status: 'succeeded',
        filesLoaded: 3,
        watermark: '2025-06-13',
      });
      // 06, 07 late-checked (discover.lateCheck), 08, 09 lookback, the watermark, 3 new.
      expect(r.incremental.partitionsListed).toEqual(
        ['06', '07', '08', '09', '10', '11', '12', '13'].map((d) => `2025/06/${d}/`),
      );
    }
    expect(long.lists).toBe(short.lists);
    // The year and month levels plus the eight partitions: a handful, not one per day of history.
    expect(long.lists).toBeLessThanOrEqual(12);
    expect((await readTarget(session, long.setup)).snapshot!.version).toBe(1);
  });
});
