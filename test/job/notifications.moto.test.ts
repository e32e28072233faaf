/**
 * Notification discovery against a real SQS implementation: moto's server (interop/storage-on-moto.sh
 * starts it and names it in TIDEMARK_MOTO_ENDPOINT; unset, nothing here is registered). The source is
 * moto's S3, the queue moto's SQS, with SQS's own receive, delete and visibility semantics; targets are
 * local folders.
 *
 * The S3 -> SQS link itself (a bucket notification configuration sending the events) is AWS's and is
 * not tested here: the tests land a file, then publish the event S3 would send for it (with the
 * object's real ETag and size) to the queue themselves, in the envelope under test. That is also how
 * they lose an event (publish none), duplicate one (publish it twice) and reorder them.
 *
 * Every landed row carries a unique rid: a file loaded twice shows as a repeated rid (append mode).
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseBody } from '../../src/discovery/notifications/envelope.js';
import type { S3Storage } from '../../src/storage/s3.js';
import { connectMoto, MOTO_ENDPOINT, type MotoHandle } from '../helpers/moto.js';
import { sleep } from '../helpers/cli.js';
import { spawnCli } from '../cli/process.js';
import { validateJobs } from '../../src/job/validate.js';
import { silentLogger } from '../../src/log/logger.js';
import {
  cleanup,
  DuckSession,
  duplicateRids,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  tempDir,
  type OrderRow,
} from './helpers.js';

const CREDENTIALS = { accessKeyId: 'moto', secretAccessKey: 'moto' };

type Envelope = 's3' | 'sns' | 'eventbridge';

/** The body S3 sends for an object created (notification-content-structure; keys form-encoded). */
function s3EventBody(
  bucket: string,
  key: string,
  etag: string,
  size: number,
  eventName = 'ObjectCreated:Put',
): string {
  return JSON.stringify({
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: 'us-east-1',
        eventTime: new Date().toISOString(),
        eventName,
        s3: {
          s3SchemaVersion: '1.0',
          bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` },
          object: {
            key: encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/'),
            size,
            eTag: etag,
            sequencer: Date.now().toString(16).toUpperCase(),
          },
        },
      },
    ],
  });
}

function bodyIn(
  envelope: Envelope,
  bucket: string,
  key: string,
  etag: string,
  size: number,
): string {
  if (envelope === 's3') return s3EventBody(bucket, key, etag, size);
  if (envelope === 'sns') {
    return JSON.stringify({
      Type: 'Notification',
      MessageId: randomUUID(),
      TopicArn: 'arn:aws:sns:us-east-1:123456789012:landing',
      Subject: 'Amazon S3 Notification',
      Message: s3EventBody(bucket, key, etag, size),
    });
  }
  return JSON.stringify({
    version: '0',
    id: randomUUID(),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [`arn:aws:s3:::${bucket}`],
    detail: {
      version: '0',
      bucket: { name: bucket },
      object: { key, size, etag, sequencer: Date.now().toString(16) },
      reason: 'PutObject',
    },
  });
}

// Without moto (npm test): the bodies these tests publish are read as the envelopes they stand for.
describe('the event bodies the moto tests publish', () => {
  it('read as S3, SNS and EventBridge envelopes naming the object, its key decoded', () => {
    for (const envelope of ['s3', 'sns', 'eventbridge'] as const) {
      const parsed = parseBody(bodyIn(envelope, 'landing', 'p/2026/a b+c.csv', 'etag1', 12));
      expect(parsed).toEqual({
        kind: envelope,
        events: [
          expect.objectContaining({
            bucket: 'landing',
            key: 'p/2026/a b+c.csv',
            created: true,
            etag: 'etag1',
            size: 12,
          }),
        ],
      });
    }
  });
});

if (MOTO_ENDPOINT) {
  const endpoint = MOTO_ENDPOINT;
  let moto: MotoHandle;
  let session: DuckSession;
  let sqs: SQSClient;
  const dirs: string[] = [];

  beforeAll(async () => {
    // The job's clients use the default credential chain (moto takes any).
    process.env['AWS_ACCESS_KEY_ID'] = CREDENTIALS.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = CREDENTIALS.secretAccessKey;
    moto = await connectMoto(endpoint);
    session = await DuckSession.open();
    sqs = new SQSClient({ region: 'us-east-1', endpoint, credentials: CREDENTIALS });
  });
  afterAll(async () => {
    sqs?.destroy();
    session?.close();
    moto?.stop();
    await cleanup(dirs);
  });

  /** A landing prefix, a queue and a local target of one test. */
  async function fixture(
    opts: {
      mode?: 'append' | 'merge';
      reconcileEvery?: string;
      visibilityTimeout?: string;
      sqsEndpoint?: string;
    } = {},
  ) {
    const prefix = `n-${randomUUID()}/`;
    const source: S3Storage = moto.makeStorage(prefix);
    const queueClient = opts.sqsEndpoint
      ? new SQSClient({ region: 'us-east-1', endpoint: opts.sqsEndpoint, credentials: CREDENTIALS })
      : sqs;
    const created = await queueClient.send(
      new CreateQueueCommand({ QueueName: `q-${randomUUID()}` }),
    );
    const queueUrl = created.QueueUrl!;
    const target = await tempDir('notify-target', dirs);
    const settings = (reconcileEvery = opts.reconcileEvery ?? '1h') =>
      makeConfig(
        {
          source: {
            uri: `s3://${moto.bucket}/${prefix}`,
            format: 'csv',
            discover: {
              by: 'notifications',
              queue: queueUrl,
              reconcileEvery,
              visibilityTimeout: opts.visibilityTimeout ?? '2s',
            },
          },
          target:
            opts.mode === 'merge'
              ? { uri: target, mode: 'merge', key: ['order_id'], orderBy: 'seq' }
              : { uri: target, mode: 'append' },
        },
        { endpoint, region: 'us-east-1', forcePathStyle: true },
      );
    /** Land `rows` as `key` under the prefix; the object's ETag and size. */
    const put = async (key: string, rows: readonly OrderRow[]) => {
      await land(source, session, key, rows);
      const info = await source.head(key);
      return { key, etag: info!.etag, size: info!.size };
    };
    /** Publish the event S3 would send for an object (as landed), in `envelope`. */
    const publish = async (
      o: { key: string; etag: string; size: number },
      envelope: Envelope = 's3',
    ) => {
      await queueClient.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: bodyIn(envelope, moto.bucket, `${prefix}${o.key}`, o.etag, o.size),
        }),
      );
    };
    const send = (body: string) =>
      queueClient.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    /** Messages visible on the queue now (received with a 0 s visibility, so they stay). */
    const visible = async () => {
      const got = await queueClient.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          VisibilityTimeout: 0,
        }),
      );
      return got.Messages ?? [];
    };
    return { prefix, source, queueUrl, queueClient, target, settings, put, publish, send, visible };
  }

  /** The rows of the target, but the seed's. */
  async function rowsOf(setup: ReturnType<typeof makeConfig>): Promise<OrderRow[]> {
    return (await readTarget(session, setup)).rows.filter((r) => r.status !== 'seed');
  }

  /**
   * The job's first run: it lists the prefix (the initial load) and loads a seed file, so the table
   * exists and records that listing (until a table exists, every run lists).
   */
  async function seeded(
    f: Awaited<ReturnType<typeof fixture>>,
    setup = f.settings(),
  ): Promise<void> {
    await f.put('seed.csv', orders([0, 'seed', 0]));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      notifications: { reconciled: true, received: 0 },
    });
  }

  describe('notification discovery on moto (SQS and S3)', () => {
    it('loads the files S3 events name in each envelope (direct, SNS, EventBridge); ignores and deletes the rest; leaves unreadable messages', async () => {
      const f = await fixture();
      const setup = f.settings();
      await seeded(f, setup);
      const a = await f.put('2026/12/02/a b+c.csv', orders([1, 'new', 1], [2, 'new', 1]));
      const b = await f.put('2026/12/02/b.csv', orders([3, 'new', 1]));
      const c = await f.put('2026/12/02/c.csv', orders([4, 'new', 1]));
      await f.publish(a, 's3');
      await f.publish(b, 'sns');
      await f.publish(c, 'eventbridge');
      // Not for this job: another prefix, a removal, S3's test event, a key not data; and a body nobody can read.
      await f.send(s3EventBody(moto.bucket, 'elsewhere/x.csv', 'e', 1));
      await f.send(
        s3EventBody(moto.bucket, `${f.prefix}2026/12/02/a b+c.csv`, 'e', 1, 'ObjectRemoved:Delete'),
      );
      await f.send(
        JSON.stringify({
          Service: 'Amazon S3',
          Event: 's3:TestEvent',
          Time: new Date().toISOString(),
          Bucket: moto.bucket,
        }),
      );
      await f.send(s3EventBody(moto.bucket, `${f.prefix}2026/12/02/_SUCCESS`, 'e', 0));
      await f.send('this is not an S3 event');

      const report = await run(setup);
      expect(report).toMatchObject({
        status: 'succeeded',
        filesLoaded: 3,
        notifications: {
          received: 8,
          deleted: 7,
          events: 6,
          outside: 1,
          notCreated: 2,
          gone: 0,
          reconciled: false,
        },
        skippedByReason: { 'not data': 1 },
      });
      expect(report.notifications!.unreadable).toEqual([
        { id: expect.any(String), why: 'the body is not JSON' },
      ]);
      const rows = await rowsOf(setup);
      expect(rows.map((r) => r.order_id)).toEqual([1, 2, 3, 4]);
      expect(duplicateRids(rows)).toEqual([]);
      // Only the unreadable message is left, handed back at once for the queue's redrive policy.
      expect((await f.visible()).map((m) => m.Body)).toEqual(['this is not an S3 event']);
    });

    it('duplicated and out-of-order events load each file once, as the store holds it', async () => {
      const f = await fixture();
      const setup = f.settings();
      await seeded(f, setup);
      const a = await f.put('a.csv', orders([1, 'a', 1]));
      // S3 delivers at least once: the same event twice in one run...
      await f.publish(a);
      await f.publish(a);
      // ...and out of order: c overwritten before its first event arrives; the newer event first.
      const c1 = await f.put('c.csv', orders([3, 'c-v1', 1]));
      const c2 = await f.put('c.csv', orders([3, 'c-v2', 2]));
      await f.publish(c2);
      await f.publish(c1);
      const first = await run(setup);
      expect(first).toMatchObject({
        status: 'succeeded',
        filesLoaded: 2,
        notifications: { received: 4, deleted: 4 },
      });
      let rows = await rowsOf(setup);
      expect(rows.map((r) => r.status)).toEqual(['a', 'c-v2']);

      // A duplicate delivered runs later, and c's old event again: the ledger knows both files.
      await f.publish(a);
      await f.publish(c1);
      const later = await run(setup);
      expect(later).toMatchObject({
        status: 'nothing-new',
        filesLoaded: 0,
        notifications: { received: 2, deleted: 2 },
        skippedByReason: { 'already loaded': 2 },
      });
      rows = await rowsOf(setup);
      expect(rows.map((r) => r.status)).toEqual(['a', 'c-v2']);
      expect(duplicateRids(rows)).toEqual([]);
      expect(await f.visible()).toEqual([]);
    });

    it('an overwrite is an event too: reloaded by onOverwrite (merge mode: the newer version wins)', async () => {
      const f = await fixture({ mode: 'merge' });
      const setup = f.settings();
      await seeded(f, setup);
      await f.publish(await f.put('o.csv', orders([7, 'first', 1])));
      await run(setup);
      await f.publish(await f.put('o.csv', orders([7, 'second', 2])));
      expect(await run(setup)).toMatchObject({
        status: 'succeeded',
        filesLoaded: 1,
        skippedByReason: {},
      });
      expect((await rowsOf(setup)).map((r) => r.status)).toEqual(['second']);
    });

    it('a file whose event was lost is found by the reconciling listing, once; its late event then finds it loaded', async () => {
      const f = await fixture();
      await seeded(f);
      const lost = await f.put('2026/12/02/lost.csv', orders([5, 'lost', 1]));
      const told = await f.put('2026/12/02/told.csv', orders([6, 'told', 1]));
      await f.publish(told);
      // No listing is due (reconcileEvery 1h): only the file with an event loads.
      expect(await run(f.settings('1h'))).toMatchObject({
        filesLoaded: 1,
        notifications: { reconciled: false },
      });
      expect((await rowsOf(f.settings())).map((r) => r.status)).toEqual(['told']);
      // A listing due: the lost file loads, the told one is not loaded again.
      const reconciling = await run(f.settings('1ms'));
      expect(reconciling).toMatchObject({
        filesLoaded: 1,
        notifications: { reconciled: true },
        skippedByReason: { 'already loaded': 2 },
      });
      // The lost event turns up after all.
      await f.publish(lost);
      expect(await run(f.settings('1h'))).toMatchObject({
        status: 'nothing-new',
        filesLoaded: 0,
        notifications: { received: 1, deleted: 1 },
      });
      const rows = await rowsOf(f.settings());
      expect(rows.map((r) => r.status)).toEqual(['lost', 'told']);
      expect(duplicateRids(rows)).toEqual([]);
      // The listing is recorded with the state: a run right after lists nothing.
      expect(await run(f.settings('1h'))).toMatchObject({ status: 'nothing-new', listRequests: 0 });
    });

    it('a run longer than the visibility timeout keeps its messages hidden (the run extends them)', async () => {
      const f = await fixture({ visibilityTimeout: '2s' });
      const setup = { ...f.settings(), job: { ...f.settings().job, maxFilesPerBatch: 1 } };
      await seeded(f, setup);
      await f.publish(await f.put('p.csv', orders([8, 'p', 1])));
      await f.publish(await f.put('q.csv', orders([9, 'q', 1])));
      let seenMidRun: number | null = null;
      const report = await run(setup, {
        hooks: {
          // After the first commit, 2.5 visibility timeouts pass: the second batch's message must stay hidden.
          afterCommit: async (batch) => {
            if (batch !== 0) return;
            await sleep(5_000);
            seenMidRun = (await f.visible()).length;
          },
        },
      });
      expect(report).toMatchObject({
        status: 'succeeded',
        filesLoaded: 2,
        commits: 2,
        notifications: { received: 2, deleted: 2 },
      });
      expect(seenMidRun).toBe(0);
      expect(report.notifications!.requests.changeVisibility).toBeGreaterThan(0);
      expect(await f.visible()).toEqual([]);
    });

    it('validate asks the queue: a missing one is a problem, one without a dead-letter queue a warning', async () => {
      const f = await fixture();
      const dir = await tempDir('notify-validate', dirs);
      const configFile = path.join(dir, 'tidemark.yaml');
      const missing = f.queueUrl.replace(/q-[^/]+$/, 'no-such-queue');
      const jobs = [
        rawJob(f.settings().job),
        {
          ...rawJob(f.settings().job),
          name: 'missing',
          source: {
            ...(rawJob(f.settings().job)['source'] as object),
            discover: { by: 'notifications', queue: missing },
          },
        },
      ];
      await fsp.writeFile(
        configFile,
        stringify({ storage: { endpoint, region: 'us-east-1', forcePathStyle: true }, jobs }),
      );
      const [ok, bad] = await validateJobs({ file: configFile }, { logger: silentLogger() });
      expect(ok!.warnings).toContainEqual(
        expect.objectContaining({
          field: 'jobs[0].source.discover.queue',
          message: expect.stringMatching(/has no redrive policy/),
        }),
      );
      expect(ok!.problems).toEqual([]);
      expect(bad!.problems).toContainEqual(
        expect.objectContaining({
          field: 'jobs[1].source.discover.queue',
          message: expect.stringMatching(/\[sqs\] attributes on queue .*no-such-queue failed/),
        }),
      );
    });

    it('kill -9 between the commit and the deletion of its messages: redelivered, found loaded, nothing loaded twice', async () => {
      // The run reaches SQS through a proxy of this test's: once the run has planned, the proxy holds
      // what the run sends (heartbeats, the deletion after the commit) and drops it at the kill, so no
      // deletion reaches SQS however fast the run is.
      const proxy = await holdingProxy(new URL(endpoint));
      try {
        const f = await fixture({ sqsEndpoint: proxy.endpoint, visibilityTimeout: '2s' });
        const setup = f.settings();
        await seeded(f, setup);
        for (const o of [
          await f.put('k1.csv', orders([11, 'k1', 1])),
          await f.put('k2.csv', orders([12, 'k2', 1])),
        ])
          await f.publish(o);
        const dir = await tempDir('notify-kill', dirs);
        const configFile = path.join(dir, 'tidemark.yaml');
        await fsp.writeFile(
          configFile,
          stringify({
            storage: { endpoint, region: 'us-east-1', forcePathStyle: true },
            jobs: [rawJob(setup.job)],
          }),
        );
        const before = await commitsIn(f.target);
        const cli = spawnCli(['run', '--config', configFile, '--json']);
        const stderr = stderrOf(cli.child);
        // Planned: messages received, files checked against the ledger. From now on nothing reaches SQS.
        await waitFor(() => /"msg":"loading"/.test(stderr()), 60_000, 'the run to plan', cli);
        proxy.hold();
        await waitFor(async () => (await commitsIn(f.target)) > before, 60_000, 'the commit', cli);
        // Give the run a moment to send the deletion (held, never forwarded); then kill it.
        await waitFor(() => proxy.held() > 0, 3_000, 'a request to SQS').catch(() => undefined);
        cli.child.kill('SIGKILL');
        expect((await cli.done).signal).toBe('SIGKILL');
        proxy.dropAll();
        let rows = await rowsOf(setup);
        expect(rows.map((r) => r.status)).toEqual(['k1', 'k2']);
        // The messages were never deleted: hidden until their timeout, then redelivered.
        await sleep(2_500);
        const rerun = await run(setup);
        expect(rerun).toMatchObject({
          status: 'nothing-new',
          filesLoaded: 0,
          notifications: { received: 2, deleted: 2 },
          skippedByReason: { 'already loaded': 2 },
        });
        rows = await rowsOf(setup);
        expect(rows.map((r) => r.status)).toEqual(['k1', 'k2']);
        expect(duplicateRids(rows)).toEqual([]);
        expect(await f.visible()).toEqual([]);
        f.queueClient.destroy();
      } finally {
        await proxy.close();
      }
    }, 180_000);
  });
}

/** The job as the YAML would spell it (durations back as text, as a user writes them). */
function rawJob(job: ReturnType<typeof makeConfig>['job']): Record<string, unknown> {
  const d = job.source.discover as { queue: string };
  return {
    name: job.name,
    source: {
      uri: job.source.uri,
      format: job.source.format,
      discover: {
        by: 'notifications',
        queue: d.queue,
        reconcileEvery: '1h',
        visibilityTimeout: '2s',
      },
    },
    target: { uri: job.target.uri, mode: job.target.mode },
  };
}

/** A child's stderr so far, as a function (listening from now on). */
function stderrOf(child: ChildProcess): () => string {
  let text = '';
  child.stderr!.on('data', (c: Buffer) => (text += c.toString('utf8')));
  return () => text;
}

async function waitFor(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
  cli?: { child: ChildProcess },
): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (cli && cli.child.exitCode !== null)
      throw new Error(`the run ended (exit ${cli.child.exitCode}) before ${what}`);
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function commitsIn(table: string): Promise<number> {
  const names = await fsp.readdir(path.join(table, '_delta_log')).catch(() => [] as string[]);
  return names.filter((n) => /^\d{20}\.json$/.test(n)).length;
}

/**
 * A TCP proxy on loopback to `target`: it forwards both ways until `hold()`; from then on what clients
 * send is kept back, and `dropAll()` closes those connections without forwarding it (what a killed
 * process's unsent requests amount to); it returns how many connections held data.
 */
async function holdingProxy(target: URL): Promise<{
  endpoint: string;
  hold(): void;
  held(): number;
  dropAll(): number;
  close(): Promise<void>;
}> {
  let holding = false;
  const sockets = new Set<Socket>();
  const withHeldData = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    client.on('data', (chunk) => {
      if (holding) withHeldData.add(client);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    hold: () => void (holding = true),
    held: () => withHeldData.size,
    dropAll: () => {
      const n = withHeldData.size;
      for (const s of sockets) s.destroy();
      withHeldData.clear();
      holding = false;
      return n;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
