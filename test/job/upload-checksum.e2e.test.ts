/**
 * Upload verification at the job level (fault injection: a proxy in front of s3rver, answering
 * S3's checksums): a data file whose stored bytes differ from what was sent fails the run before
 * its commit, naming the file's key and both checksums; the file is deleted, no version is
 * written, the watermark does not move, and the next run loads the batch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_FAILED, exitCodeFor } from '../../src/cli/exit-codes.js';
import { UploadChecksumError } from '../../src/storage/s3/upload-check.js';
import { openTarget } from '../../src/job/open.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  orders,
  readTarget,
  runOutcome,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
let proxy: FaultProxy;

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv({ threads: 1 }));
  proxy = await startFaultProxy({
    target: s3.endpoint,
    emulateConditionals: true,
    emulateChecksums: true,
  });
});

afterAll(async () => {
  await proxy?.stop();
  await closeS3JobEnv(s3, session, []);
});

describe('a data file the store damages after checking it', () => {
  it('fault injection: the run fails before its commit naming the file and both checksums, the file is deleted, and the next run loads it', async () => {
    const zone = s3.landingZone('upload-check');
    await land(
      zone.source,
      session,
      '2025/05/01/a.csv',
      orders([1, 'placed', 10], [2, 'paid', 20]),
    );
    const tablePrefix = `table-${zone.prefix}`;
    const storage = {
      endpoint: proxy.endpoint,
      region: s3.region,
      forcePathStyle: true,
      singleWriter: false,
    };
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: mergeTarget(`s3://${s3.bucket}/${tablePrefix}`),
      },
      storage,
    );
    const rule = proxy.faultNext('corruptStored', {
      method: 'PUT',
      path: new RegExp(`/${tablePrefix}part-[^?]*\\.parquet\\?`),
    });

    const failed = await runOutcome(setup);
    expect(rule.hits).toBe(1);
    expect(failed.ok).toBe(false);
    const error = (failed as { error: unknown }).error;
    expect(error).toBeInstanceOf(UploadChecksumError);
    const e = error as UploadChecksumError;
    expect(e.context).toMatchObject({ checksum: 'CRC64NVME', removed: 'deleted' });
    expect(String(e.context.key)).toMatch(/^part-.*\.parquet$/);
    expect(e.message).toContain(
      `the store answered the CRC64NVME checksum ${String(e.context['stored'])} for what it stored, where the bytes sent have ${String(e.context['sent'])}`,
    );
    expect(exitCodeFor(error)).toBe(EXIT_FAILED);
    // Nothing committed, and the damaged file is gone: no Parquet file is left (the batch's ledger
    // file is written only at the commit point, after the data is verified).
    expect((await readTarget(session, setup)).snapshot).toBeNull();
    const table = openTarget(setup.job, setup.storage);
    const left = (await table.listAll()).objects
      .filter((o) => o.key.endsWith('.parquet'))
      .map((o) => o.key);
    expect(left).toEqual([]);

    const ok = await runOutcome(setup);
    expect(ok.ok).toBe(true);
    const view = await readTarget(session, setup);
    expect(view.rows.map((r) => [r.order_id, r.status, r.seq])).toEqual([
      [1, 'placed', 10],
      [2, 'paid', 20],
    ]);
    expect(
      (ok as { report: { checksums?: { uploads: Record<string, number> } } }).report.checksums
        ?.uploads['CRC64NVME'],
    ).toBeGreaterThan(0);
  });
});
