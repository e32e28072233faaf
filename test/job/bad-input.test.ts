/**
 * Bad input through the real job (docs/concepts.md, Bad files). Each bad file lands next to a good one
 * after a first load:
 * - `onBadFile: fail` (the default): the run fails with an error naming the file (and line, row
 *   or column where known), nothing is committed and the watermark does not move;
 * - `onBadFile: quarantine`: the file is recorded in the job state (key, ETag, error, time),
 *   shown by status and in the run report, skipped, and the good file loads in the same commit;
 *   the next run does not retry it, unless it is overwritten with new content.
 * Local folders for every case; the key cases again with source and target on s3rver.
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadFileError, type TidemarkError } from '../../src/errors.js';
import { jobStatus } from '../../src/job/status.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { parquetOf } from './drift-helpers.js';
import { silentLogger } from '../../src/log/logger.js';
import {
  closeS3JobEnv,
  DuckSession,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  readTarget,
  run,
  tempDir,
  unwrap,
} from './helpers.js';
import { failure } from '../helpers/cli.js';

let session: DuckSession;
let s3: S3rverHandle;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv({ threads: 2 }));
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

const HEADER = 'order_id,status,seq\n';

/** A bad file: its key below the second day's folder, its bytes, and what the error says. */
interface BadCase {
  name: string;
  file: string;
  body: () => Promise<Uint8Array | string>;
  /** Expected in the error message (besides the file's URI). */
  says: RegExp;
  /** Expected in the error's context (besides `key`). */
  context?: Record<string, unknown>;
}

const orderParquet = () =>
  parquetOf(
    session,
    `SELECT range + 100 AS order_id, 'placed' AS status, 1 AS seq FROM range(500)`,
  );

const CASES: BadCase[] = [
  {
    name: 'corrupt Parquet',
    file: 'corrupt.parquet',
    body: async () => 'PAR1 this is not a parquet file PAR1',
    says: /Footer|magic/i,
  },
  {
    name: 'truncated Parquet (a real file cut in half)',
    file: 'half.parquet',
    body: async () => {
      const bytes = await orderParquet();
      return bytes.subarray(0, bytes.length >> 1);
    },
    says: /magic bytes/,
  },
  {
    name: 'truncated gzip CSV',
    file: 'half.csv.gz',
    body: async () => {
      const gz = gzipSync(
        HEADER + Array.from({ length: 3000 }, (_, i) => `${i + 100},placed,1`).join('\n') + '\n',
      );
      return gz.subarray(0, gz.length >> 1);
    },
    says: /cannot read/,
  },
  {
    name: 'ragged CSV rows',
    file: 'ragged.csv',
    body: async () => `${HEADER}9,placed,1\n10,placed\n`,
    says: /line 3: expected 3 fields, found 2; the job reads CSV with delimiter ','/,
    context: { line: 3 },
  },
  {
    name: 'a ragged CSV row past the sniffer sample (named by line)',
    file: 'ragged-far.csv',
    body: async () => {
      const lines = Array.from({ length: 25_000 }, (_, i) => `${i + 100},placed,1`);
      lines[24_000] = '77,placed';
      return HEADER + lines.join('\n') + '\n';
    },
    // Line 24002 of the file: the header is line 1. Named as a break near the start is.
    says: /line 24002: expected 3 fields, found 2; the job reads CSV with delimiter ','/,
    context: { line: 24_002 },
  },
  {
    name: 'an invalid JSON line',
    file: 'bad.ndjson',
    body: async () => '{"order_id":9,"status":"p","seq":1}\n\n{"order_id": 10, oops\n',
    // DuckDB says "line 3" for the second record (one past it, blank lines skipped): it is on line 3.
    says: /bad\.ndjson: line 3 \(record 2\): malformed JSON, /,
    context: { line: 3, row: 2 },
  },
  {
    name: 'an invalid first JSON line, among good ones',
    file: 'bad-first.ndjson',
    body: async () => '{"order_id": 10, oops\n{"order_id":9,"status":"p","seq":1}\n',
    // DuckDB says "line 2".
    says: /bad-first\.ndjson: line 1 \(record 1\): malformed JSON, /,
    context: { line: 1, row: 1 },
  },
  {
    name: 'a zero-byte Parquet file',
    file: 'empty.parquet',
    body: async () => '',
    says: /empty \(0 bytes\)/,
  },
  {
    name: 'Parquet bytes named .csv',
    file: 'really-parquet.csv',
    body: orderParquet,
    says: /line 1: invalid UTF-8/,
    context: { line: 1 },
  },
  {
    // Excel on Windows writes CSV in Windows-1252: DuckDB's sniffer stops at the byte.
    name: 'a Latin-1 CSV (named by line)',
    file: 'latin1.csv',
    body: async () =>
      Buffer.concat([Buffer.from(`${HEADER}9,caf`), Buffer.from([0xe9]), Buffer.from(',1\n')]),
    says: /line 2: invalid UTF-8 \(is it a text file\? tidemark reads CSV as UTF-8/,
    context: { line: 2 },
  },
  {
    name: 'a .txt file with no configured format',
    file: 'notes.txt',
    body: async () => 'hello\n',
    says: /cannot tell the format from the file name/,
  },
  {
    // Spark, pyarrow and DuckDB write TIME columns; Delta has no such type. Found only after the
    // batch was read, the refusal named no file and could not be quarantined.
    name: 'a Parquet TIME column (no Delta type)',
    file: 'time.parquet',
    body: () =>
      parquetOf(
        session,
        `SELECT 3 AS order_id, 'placed' AS status, 1 AS seq, TIME '12:34:56' AS picked_at`,
      ),
    says: /column "picked_at" has DuckDB type TIME, which has no Delta Lake equivalent/,
    context: { column: 'picked_at' },
  },
  {
    name: 'a JSON text DuckDB reads as TIME',
    file: 'time.ndjson',
    body: async () => '{"order_id":3,"status":"placed","seq":1,"picked_at":"12:34:56"}\n',
    says: /column "picked_at" has DuckDB type TIME, which has no Delta Lake equivalent/,
    context: { column: 'picked_at' },
  },
  {
    name: 'a NULL key',
    file: 'null-key.csv',
    body: async () => `${HEADER}11,placed,1\n,placed,2\n`,
    says: /key column "order_id" is null/,
    context: { row: 2, column: 'order_id' },
  },
  {
    name: 'a file without the key column',
    file: 'no-key.csv',
    body: async () => 'status,seq\nplaced,1\n',
    says: /key column "order_id" is null/,
    context: { row: 1 },
  },
  {
    name: 'a value that does not fit its column',
    file: 'not-a-number.csv',
    body: async () => `${HEADER}12,placed,1\n13,placed,soon\n`,
    says: /value "soon" of column "seq" cannot be cast to its type BIGINT \(the table column's, as source.columns declares it, or as the batch's Parquet files combine theirs\)/,
    context: { row: 2, column: 'seq' },
  },
];

interface Zone {
  source: Storage;
  /** The source URI as errors print it (ends with '/'). */
  uri: string;
  storageConfig: Record<string, unknown>;
  target: string;
}

async function localZone(): Promise<Zone> {
  const dir = await tempDir('bad-src', dirs);
  const source = new LocalStorage(dir);
  return { source, uri: source.uri, storageConfig: {}, target: await tempDir('bad-t', dirs) };
}

function s3Zone(): Zone {
  const { source, uri, storageConfig } = s3.landingZone('bad');
  return {
    source,
    uri,
    storageConfig: { ...storageConfig, singleWriter: true },
    target: `s3://${s3.bucket}/lake-${randomUUID()}/orders`,
  };
}

/** A zone with a first load (day 1) done, and day 2 holding a good file and the bad one. */
async function landedZone(zone: Zone, bad: BadCase, onBadFile: 'fail' | 'quarantine') {
  const setup = makeConfig(
    {
      source: {
        uri: zone.uri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 },
      },
      target: mergeTarget(zone.target),
      onBadFile,
    },
    zone.storageConfig,
  );
  await zone.source.write('2025/03/01/seed.csv', `${HEADER}1,placed,1\n`);
  expect(await run(setup)).toMatchObject({ status: 'succeeded', tableVersion: 0 });
  await zone.source.write('2025/03/02/good.csv', `${HEADER}2,placed,1\n1,paid,2\n`);
  await zone.source.write(`2025/03/02/${bad.file}`, await bad.body());
  return setup;
}

async function expectFailsNamingTheFile(zone: Zone, bad: BadCase): Promise<void> {
  const setup = await landedZone(zone, bad, 'fail');
  const err = await failure<TidemarkError>(run(setup));
  const uri = `${zone.uri}2025/03/02/${bad.file}`;
  expect(err).toBeInstanceOf(BadFileError);
  expect(err.message).toContain(uri);
  expect(err.message).toMatch(bad.says);
  expect(err.context).toMatchObject({ key: uri, ...bad.context });
  const table = await readTarget(session, setup);
  expect(table.snapshot!.version).toBe(0);
  expect(table.state.discovery).toMatchObject({ watermark: '2025-03-01' });
  expect(table.rows.map((r) => [r.order_id, r.status])).toEqual([[1, 'placed']]);
}

async function expectQuarantinedAndTheRestLoaded(zone: Zone, bad: BadCase): Promise<void> {
  const setup = await landedZone(zone, bad, 'quarantine');
  const key = `2025/03/02/${bad.file}`;
  const report = await run(setup);
  expect(report).toMatchObject({
    status: 'succeeded',
    commits: 1,
    tableVersion: 1,
    filesLoaded: 1,
    watermark: '2025-03-02',
  });
  expect(report.quarantined).toEqual([{ key, reason: expect.stringMatching(bad.says) }]);
  const table = await readTarget(session, setup);
  expect(table.rows.map((r) => [r.order_id, r.status]).sort()).toEqual([
    [1, 'paid'],
    [2, 'placed'],
  ]);
  expect(table.state.quarantined).toEqual([
    {
      key,
      etag: expect.any(String),
      error: expect.stringMatching(bad.says),
      at: expect.any(String),
    },
  ]);
  expect(table.state.quarantined[0]!.etag).not.toBe('');
  expect(Date.parse(table.state.quarantined[0]!.at)).toBeGreaterThan(Date.now() - 60_000);
  expect(table.state.totals.filesLoaded).toBe(2);
  // Done for discovery: the next run does not try it again.
  expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesDiscovered: 0 });
  const status = unwrap(
    await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger() }),
  );
  expect(status.quarantined).toEqual([
    { key, error: table.state.quarantined[0]!.error, at: table.state.quarantined[0]!.at },
  ]);
}

describe('bad input, local folders', () => {
  describe.each(CASES)('$name', (bad) => {
    it('fails the batch naming the file: nothing committed, the watermark stays (onBadFile: fail)', async () => {
      await expectFailsNamingTheFile(await localZone(), bad);
    });
    it('is quarantined, shown by status, and the rest loads in the same commit (onBadFile: quarantine)', async () => {
      await expectQuarantinedAndTheRestLoaded(await localZone(), bad);
    });
  });

  it('a zero-byte CSV is an empty file, not a bad one: it loads no rows and moves the watermark', async () => {
    const zone = await localZone();
    const setup = await landedZone(
      zone,
      { name: 'empty csv', file: 'empty.csv', body: async () => '', says: /x/ },
      'fail',
    );
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
      watermark: '2025-03-02',
    });
    const table = await readTarget(session, setup);
    expect(table.columns).not.toContain('column0');
    expect(table.state.quarantined).toEqual([]);
  });

  it('a quarantined file overwritten with good content is loaded again and leaves the list', async () => {
    const zone = await localZone();
    const bad = CASES.find((c) => c.file === 'ragged.csv')!;
    const setup = await landedZone(zone, bad, 'quarantine');
    await run(setup);
    await zone.source.write('2025/03/02/ragged.csv', `${HEADER}9,placed,1\n10,placed,1\n`);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1, inserted: 2 });
    const table = await readTarget(session, setup);
    expect(table.rows.map((r) => r.order_id).sort((a, b) => a - b)).toEqual([1, 2, 9, 10]);
    expect(table.state.quarantined).toEqual([]);
  });

  it('several bad files in one batch are all set aside; a batch of only bad files commits the state alone', async () => {
    const zone = await localZone();
    const setup = await landedZone(zone, CASES[0]!, 'quarantine');
    await zone.source.write('2025/03/02/also-bad.ndjson', '{oops\n');
    const report = await run(setup);
    expect(report.quarantined!.map((q) => q.key).sort()).toEqual([
      '2025/03/02/also-bad.ndjson',
      '2025/03/02/corrupt.parquet',
    ]);
    await zone.source.write('2025/03/03/only-bad.parquet', 'nope');
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 0,
      tableVersion: 2,
      watermark: '2025-03-03',
    });
    const table = await readTarget(session, setup);
    const keys = table.state.quarantined.map((q) => q.key);
    expect(keys.slice(0, 2).sort()).toEqual([
      '2025/03/02/also-bad.ndjson',
      '2025/03/02/corrupt.parquet',
    ]);
    expect(keys[2]).toBe('2025/03/03/only-bad.parquet');
  });
});

describe('bad input, source and target on s3rver', () => {
  const KEY_CASES = [
    'corrupt.parquet',
    'half.parquet',
    'half.csv.gz',
    'bad.ndjson',
    'null-key.csv',
  ].map((f) => CASES.find((c) => c.file === f)!);
  describe.each(KEY_CASES)('$name', (bad) => {
    it('fails naming the file; nothing committed (onBadFile: fail)', async () => {
      await expectFailsNamingTheFile(s3Zone(), bad);
    });
    it('is quarantined and the rest loads (onBadFile: quarantine)', async () => {
      await expectQuarantinedAndTheRestLoaded(s3Zone(), bad);
    });
  });
});
