/**
 * (d) of the ingest benchmark: what checksums cost. The initial load of (a) again, from an S3
 * landing zone into an S3 table, both on the embedded S3 server (loopback, so the network costs
 * nothing and the checks' CPU is all that differs), with the default checks (every upload carries
 * a CRC64NVME, and its answer is compared with the bytes sent: s3rver answers no checksum, so a
 * single-part upload's ETag is compared with their MD5 and a multipart one is 'not available';
 * every download is hashed against the object's ETag) and with them off (`uploadChecksum: off`, `etagChecksum: false`),
 * alternated. Target: the checks cost under 10 % of the load. Correctness: both tables equal (a)'s.
 */
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { startEmbeddedS3 } from '../lib/embedded-s3.js';
import { S3Storage } from '../../src/storage/s3.js';
import type { ChecksumCounts } from '../../src/storage/storage.js';
import { samplesOf, type Samples } from './clock.js';
import { ordersJob, runOrdersJob } from './job.js';
import type { LandingSpec } from './landing.js';
import { ORDER_COLUMNS } from './orders.js';
import { secs } from './report.js';
import { progress, withSession } from './session.js';
import { fingerprintAt, type TableFingerprint } from './verify.js';
import type { Workspace } from './workspace.js';

const BUCKET = 'bench';
const CHECKS_OFF = { uploadChecksum: 'off', etagChecksum: false } as const;

/** (d) figures. */
export interface ChecksumResult {
  /** Loads with the default checks, and without. */
  on: Samples;
  off: Samples;
  /** median on / median off − 1: the share of the load the checks cost. */
  cost: number;
  /** The same for process CPU time. */
  cpuCost: number;
  /** What the last load with checks checked (its run report), and the last without. */
  checked: ChecksumCounts;
  unchecked: ChecksumCounts;
  verified: boolean;
}

/** Run (d); `expected` is (a)'s table, which both loads must equal. */
export async function benchChecksums(
  ws: Workspace,
  spec: LandingSpec,
  repeat: number,
  expected: TableFingerprint,
): Promise<ChecksumResult> {
  const server = await startEmbeddedS3({ buckets: [BUCKET], directory: ws.path('s3') });
  const saved = {
    id: process.env['AWS_ACCESS_KEY_ID'],
    secret: process.env['AWS_SECRET_ACCESS_KEY'],
  };
  // The job's S3 client takes credentials from the default chain, as in production.
  process.env['AWS_ACCESS_KEY_ID'] = server.credentials.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = server.credentials.secretAccessKey;
  const endpoint = { endpoint: server.endpoint, region: server.region, forcePathStyle: true };
  try {
    progress('(d) copying the landing zone to the embedded S3 server');
    const bucket = new S3Storage({
      bucket: BUCKET,
      ...endpoint,
      credentials: server.credentials,
      ...CHECKS_OFF,
    });
    const files = await filesBelow(spec.root);
    for (const file of files)
      await bucket.upload(`landing/${relative(spec.root, file).split('\\').join('/')}`, file);
    for (const file of files.slice(0, 2))
      await bucket.upload(`warm-up/${relative(spec.root, file).split('\\').join('/')}`, file);
    bucket.client.destroy();
    const load = (variant: 'on' | 'off', source: string, target: string) =>
      runOrdersJob(
        ordersJob({
          name: 'orders',
          source: `s3://${BUCKET}/${source}/`,
          target: `s3://${BUCKET}/${target}`,
          spoolRoot: ws.dir,
          storage: { ...endpoint, singleWriter: true, ...(variant === 'off' ? CHECKS_OFF : {}) },
        }),
      );
    // One-time costs of the first S3 load (clients, the credential chain, connections) fall on neither side.
    for (const variant of ['on', 'off'] as const)
      await load(variant, 'warm-up', `warm-up-${variant}`);
    const runs = {
      on: [] as Array<Awaited<ReturnType<typeof runOrdersJob>>>,
      off: [] as Array<Awaited<ReturnType<typeof runOrdersJob>>>,
    };
    for (let rep = 1; rep <= repeat; rep++) {
      // Alternate which goes first, so neither always meets a warmer server.
      const order = rep % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      progress(
        `(d ${rep}/${repeat}) the initial load from and to S3, checks ${order.join(' then ')}`,
      );
      for (const variant of order)
        runs[variant].push(await load(variant, 'landing', `table-${variant}-${rep}`));
      progress(
        `  on ${secs(runs.on[runs.on.length - 1]!.ms)}, off ${secs(runs.off[runs.off.length - 1]!.ms)}`,
      );
    }
    const tables = await Promise.all(
      (['on', 'off'] as const).map((variant) => {
        const table = new S3Storage({
          bucket: BUCKET,
          prefix: `table-${variant}-${repeat}/`,
          ...endpoint,
          credentials: server.credentials,
        });
        return withSession((s) => fingerprintAt(s, table, ORDER_COLUMNS)).finally(() =>
          table.client.destroy(),
        );
      }),
    );
    const [on, off] = [samplesOf(runs.on.map((r) => r.ms)), samplesOf(runs.off.map((r) => r.ms))];
    const checked = runs.on[runs.on.length - 1]!.report.checksums ?? { reads: {}, uploads: {} };
    const unchecked = runs.off[runs.off.length - 1]!.report.checksums ?? { reads: {}, uploads: {} };
    const same = (t: TableFingerprint) => t.rows === expected.rows && t.hash === expected.hash;
    return {
      on,
      off,
      cost: on.median / off.median - 1,
      cpuCost:
        samplesOf(runs.on.map((r) => r.cpuMs)).median /
          samplesOf(runs.off.map((r) => r.cpuMs)).median -
        1,
      checked,
      unchecked,
      verified:
        tables.every(same) &&
        (checked.reads['ETag MD5'] ?? 0) >= spec.files &&
        (checked.uploads['ETag MD5'] ?? 0) > 0 &&
        Object.keys(checked.uploads).every((k) => k === 'ETag MD5' || k === 'not available') &&
        Object.keys(unchecked.uploads).every((k) => k === 'none') &&
        Object.keys(unchecked.reads).every((k) => k === 'none'),
    };
  } finally {
    process.env['AWS_ACCESS_KEY_ID'] = saved.id;
    process.env['AWS_SECRET_ACCESS_KEY'] = saved.secret;
    if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
    if (saved.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
    await server.stop();
  }
}

async function filesBelow(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
