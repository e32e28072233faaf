/**
 * What a run costs and where its limits are: the S3 requests it reports, the DuckDB memory limit
 * and threads of `engine`, and a full disk under the spool folder, which stops the run with an
 * error naming the folder, commits nothing more and leaves no spool behind.
 */
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceError } from '../../src/errors.js';
import type { StorageOpener } from '../../src/job/open.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openStorage } from '../../src/storage/uri.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  land,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  orders,
  readTarget,
  run,
  runOutcome,
  tempDir,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

describe('a run reports the S3 requests it sent and the bytes it checked', () => {
  it('counts list, get, put, head and delete of the source and the target on s3rver, and the checked reads and uploads; a local run has none', async () => {
    const zone = s3.landingZone('requests');
    await land(
      zone.source,
      session,
      '2026/11/01/a.csv',
      orders([1, 'placed', 1], [2, 'placed', 1]),
    );
    const onS3 = makeConfig(
      {
        source: { uri: zone.uri, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: mergeTarget(`s3://${s3.bucket}/lake-${Date.now()}/orders`),
      },
      { ...zone.storageConfig, singleWriter: true },
    );
    const report = await run(onS3);
    expect(report.status).toBe('succeeded');
    expect(report.requests).toBeDefined();
    const r = report.requests!;
    // Listing the partitions, downloading the file, reading the (empty) log, uploading a data file and the commit.
    expect(r.list).toBeGreaterThan(0);
    expect(r.get).toBeGreaterThan(0);
    expect(r.put).toBeGreaterThanOrEqual(2);
    // Every upload (the data file, the commit) carried a CRC64NVME, which s3rver neither checks nor
    // answers: each was verified by its answer's ETag as the MD5 of the bytes sent; the landing
    // file's download was checked against its ETag too; reads of the log, if any, likewise.
    expect(report.checksums?.uploads).toEqual({ 'ETag MD5': r.put });
    expect(report.checksums?.reads['ETag MD5']).toBeGreaterThanOrEqual(1);
    expect(Object.keys(report.checksums!.reads)).toEqual(['ETag MD5']);

    const local = makeConfig({
      source: {
        uri: await tempDir('req-src', dirs),
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
      },
      target: mergeTarget(await tempDir('req-t', dirs)),
    });
    const localReport = await run(local);
    expect(localReport.requests).toBeUndefined();
    expect(localReport.checksums).toBeUndefined();
  });
});

describe('engine limits', () => {
  it('engine.memoryLimit and engine.threads reach the DuckDB session of every run', async () => {
    const seen: Array<{ memory: string; threads: number }> = [];
    const original = DuckSession.open.bind(DuckSession);
    DuckSession.open = async (opts) => {
      const s = await original(opts);
      const row = await s.one(
        "SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t",
      );
      seen.push({ memory: String(row?.['m']), threads: Number(row?.['t']) });
      return s;
    };
    try {
      const src = await tempDir('eng-src', dirs);
      await land(new LocalStorage(src), session, '2026/11/01/a.csv', orders([1, 'placed', 1]));
      const setup = makeConfig({
        source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: mergeTarget(await tempDir('eng-t', dirs)),
      });
      await run(setup, { engine: { memoryLimit: 512 * 1024 * 1024, threads: 1 } });
    } finally {
      DuckSession.open = original;
    }
    expect(seen).toEqual([{ memory: '512.0 MiB', threads: 1 }]);
  });
});

describe('DuckDB out of memory while loading', () => {
  it('is a ResourceError naming the file, never a bad file: with onBadFile quarantine nothing is quarantined or committed', async () => {
    const src = await tempDir('oom-src', dirs);
    // 300,000 rows of 200-character text: loading and sorting them needs far more than 8 MiB.
    const csv = `${src}/2026/11/01/big.csv`;
    await LocalStorage.at(src).write('2026/11/01/.keep', '');
    await session.run(
      `COPY (SELECT i AS order_id, repeat('x', 200) || i AS status, i AS seq, 'r' || i AS rid FROM range(300000) t(i)) TO '${csv}' (HEADER)`,
    );
    const setup = makeConfig({
      source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: mergeTarget(await tempDir('oom-t', dirs)),
      onBadFile: 'quarantine',
    });
    const outcome = await runOutcome(setup, {
      engine: { memoryLimit: 8 * 1024 * 1024, threads: 1 },
    });
    expect(outcome.ok).toBe(false);
    const err = !outcome.ok ? outcome.error : null;
    expect(err).toBeInstanceOf(ResourceError);
    expect((err as ResourceError).message).toMatch(
      /^\[load\] DuckDB ran out of memory while reading file:\/\/.*\/2026\/11\/01\/big\.csv \(the file is not at fault\)/,
    );
    expect(String((err as ResourceError).context.key)).toMatch(/2026\/11\/01\/big\.csv$/);
    expect(outcome.report).toMatchObject({ status: 'failed', commits: 0 });
    expect(outcome.report.quarantined ?? []).toEqual([]);
    expect((await readTarget(session, setup)).snapshot).toBeNull();
  });
});

describe('a full disk under the spool folder', () => {
  it('fault injection (downloads into the spool fail with ENOSPC): the run fails naming the spool folder, commits nothing and removes the spool', async () => {
    const src = await tempDir('enospc-src', dirs);
    await land(new LocalStorage(src), session, '2026/11/01/a.csv', orders([1, 'placed', 1]));
    const setup = makeConfig({
      source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: mergeTarget(await tempDir('enospc-t', dirs)),
    });
    const spoolRoot = await tempDir('enospc-spool', dirs);
    // The source behaves like S3 (no local paths: files are downloaded into the spool), and the
    // disk under the spool is full. A real full disk cannot be produced on demand here.
    const full: StorageOpener = (uri, opts) => {
      const storage = openStorage(uri, opts);
      if (uri !== setup.job.source.uri) return storage;
      return Object.assign(Object.create(storage) as typeof storage, {
        localPath: () => null,
        download: async (_key: string, localPath: string) => {
          throw Object.assign(new Error(`ENOSPC: no space left on device, write '${localPath}'`), {
            code: 'ENOSPC',
            path: localPath,
          });
        },
      });
    };
    const outcome = await runOutcome(setup, { openStorage: full, spoolRoot });
    expect(outcome.ok).toBe(false);
    const err = !outcome.ok ? outcome.error : null;
    expect(err).toBeInstanceOf(ResourceError);
    expect((err as ResourceError).message).toMatch(
      /the disk holding the spool folder .*tidemark-orders-.* is full \(ENOSPC\)/,
    );
    expect(outcome.report).toMatchObject({ status: 'failed', commits: 0 });
    expect(await readdir(spoolRoot)).toEqual([]);
    expect((await readTarget(session, setup)).snapshot).toBeNull();
  });
});
