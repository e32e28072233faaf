/**
 * S3Storage specifics. Real behaviour runs against s3rver; the few faults s3rver cannot
 * produce (412/409 on a conditional put, 503, 403, a looping continuation token,
 * per-key delete errors) use a mocked S3 client and say so in the test name.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  DeleteObjectsCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError, isTransient } from '../../src/errors.js';
import { S3Storage, s3ClientConfig } from '../../src/storage/s3.js';
import { startS3rver } from '../helpers/s3rver.js';
import type { S3rverHandle } from '../helpers/s3rver.js';

let s3: S3rverHandle;
let tmp: string;
beforeAll(async () => {
  s3 = await startS3rver();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-s3-'));
});
afterAll(async () => {
  await s3?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

/**
 * A client on s3rver that records every command it sends: its name, with the part number of an
 * upload part and the first key and size of a delete batch. s3rver now and then answers 500 to
 * a request the driver then retries, so tests compare the distinct commands (`distinct`).
 */
function recordingClient(): { client: S3Client; commands: string[]; distinct: () => string[] } {
  const client = new S3Client(s3ClientConfig(s3.clientOptions));
  const commands: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        PartNumber?: number;
        Delete?: { Objects?: { Key?: string }[] };
      };
      const objects = input.Delete?.Objects;
      const detail = input.PartNumber
        ? ` #${input.PartNumber}`
        : objects
          ? ` ${objects.length} from ${objects[0]?.Key?.split('/').pop()}`
          : '';
      commands.push(`${context.commandName ?? '?'}${detail}`);
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  return { client, commands, distinct: () => [...new Set(commands)] };
}

describe('S3Storage on s3rver', () => {
  it('keeps keys relative to its prefix and strips ETag quotes', async () => {
    const prefix = `rel-${randomUUID()}/deep/`;
    const storage = s3.makeStorage(prefix);
    await storage.write('x.csv', 'a,b\n');
    const raw = await s3.client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }),
    );
    expect(raw.Contents?.map((o) => o.Key)).toEqual([`${prefix}x.csv`]);
    expect(raw.Contents?.[0]?.ETag).toMatch(/^".+"$/);
    const listed = (await storage.listAll()).objects;
    expect(listed.map((o) => o.key)).toEqual(['x.csv']);
    expect(listed[0]!.etag).toBe(raw.Contents![0]!.ETag!.slice(1, -1));
    expect((await storage.head('x.csv'))!.etag).toBe(listed[0]!.etag);
    expect(storage.uri).toBe(`s3://${s3.bucket}/${prefix}`);
    expect(storage.localPath('x.csv')).toBeNull();
  });

  it('uploads above the part size as multipart, below it as one PutObject', async () => {
    const { client, commands, distinct } = recordingClient();
    const storage = new S3Storage({
      bucket: s3.bucket,
      prefix: `mp-${randomUUID()}`,
      client,
      partSize: 5 * 1024 * 1024,
    });
    const big = path.join(tmp, 'big.bin');
    await fsp.writeFile(big, Buffer.alloc(11 * 1024 * 1024, 7));
    await storage.upload('big.bin', big);
    const parts = ['UploadPartCommand #1', 'UploadPartCommand #2', 'UploadPartCommand #3'];
    expect(distinct()[0]).toBe('CreateMultipartUploadCommand');
    expect(distinct().slice(1, 4).sort()).toEqual(parts);
    // s3rver's CompleteMultipartUpload answers no checksum: a HEAD asks for it (in vain, 'not available').
    expect(distinct().slice(4)).toEqual(['CompleteMultipartUploadCommand', 'HeadObjectCommand']);
    commands.length = 0;
    const small = path.join(tmp, 'small.bin');
    await fsp.writeFile(small, 'tiny');
    await storage.upload('small.bin', small);
    expect(distinct()).toEqual(['PutObjectCommand']);
    client.destroy();
  });

  it('deletes more than 1000 keys in batches of 1000', async () => {
    const { client, commands, distinct } = recordingClient();
    const storage = new S3Storage({ bucket: s3.bucket, prefix: `del-${randomUUID()}`, client });
    const keys = Array.from({ length: 1003 }, (_, i) => `k/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 100)
      await Promise.all(keys.slice(i, i + 100).map((k) => storage.write(k, '')));
    commands.length = 0;
    await storage.delete(keys);
    expect(distinct()).toEqual([
      'DeleteObjectsCommand 1000 from 0000',
      'DeleteObjectsCommand 3 from 1000',
    ]);
    expect((await storage.listAll()).objects).toEqual([]);
    client.destroy();
  });

  it('leaves checksums to the driver on AWS as on other endpoints: the SDK neither checks answers on its own nor adds its own upload checksum', async () => {
    for (const opts of [{ region: 'eu-west-1' }, s3.clientOptions]) {
      const client = new S3Client(s3ClientConfig(opts));
      expect(await client.config.responseChecksumValidation()).toBe('WHEN_REQUIRED');
      expect(await client.config.requestChecksumCalculation()).toBe('WHEN_REQUIRED');
      client.destroy();
    }
  });

  it("serverTime is the listing's HTTP Date header (fault injection: Date header rewritten)", async () => {
    // A real s3rver exchange whose Date header is rewritten on the way back, to prove the
    // value comes from the response and not from the local clock.
    const probe = new S3Client(s3ClientConfig(s3.clientOptions));
    const inner = probe.config.requestHandler as {
      handle: (
        req: unknown,
        opts?: unknown,
      ) => Promise<{ response: { headers: Record<string, string> } }>;
    };
    const client = new S3Client({
      ...s3ClientConfig(s3.clientOptions),
      requestHandler: {
        async handle(req: unknown, opts?: unknown) {
          const out = await inner.handle(req, opts);
          out.response.headers['date'] = 'Sat, 01 Jan 2000 00:00:00 GMT';
          return out;
        },
      } as never,
    });
    const storage = new S3Storage({ bucket: s3.bucket, prefix: `date-${randomUUID()}`, client });
    const page = await storage.listAll();
    expect(page.serverTime.toISOString()).toBe('2000-01-01T00:00:00.000Z');
    client.destroy();
    probe.destroy();
  });

  it('counts the requests it sends by kind; children share the count', async () => {
    const storage = s3.makeStorage(undefined, { partSize: 5 * 1024 * 1024 });
    expect(storage.requestCounts()).toEqual({ list: 0, get: 0, put: 0, head: 0, delete: 0 });
    await storage.write('a', 'aaa'); // put
    expect(await storage.writeIfAbsent('b', 'bbb')).toBe(true); // put
    await storage.head('a'); // head
    expect(await storage.head('missing')).toBeNull(); // head (404)
    await storage.read('a'); // get
    expect(await storage.read('missing')).toBeNull(); // get (404)
    await (await storage.readStream('a')).toArray(); // get
    await storage.download('a', path.join(tmp, 'counted', 'a')); // get
    let pages = 0;
    for await (const _ of storage.list({ pageSize: 1 })) pages++; // list per page
    await storage.child('sub').write('c', 'ccc'); // put, counted on the parent too
    const small = path.join(tmp, 'counted-small.bin');
    await fsp.writeFile(small, 'tiny');
    await storage.upload('u', small); // put
    const big = path.join(tmp, 'counted-big.bin');
    await fsp.writeFile(big, Buffer.alloc(5 * 1024 * 1024 + 1, 3));
    await storage.upload('big', big); // create + 2 parts + complete: 4 puts; a HEAD for its checksum
    await storage.delete(['a', 'b']); // delete
    expect(pages).toBe(2);
    expect(storage.requestCounts()).toEqual({ list: 2, get: 4, put: 8, head: 3, delete: 1 });
    expect(storage.child('x').requestCounts()).toEqual(storage.requestCounts());
    expect(s3.makeStorage().requestCounts().put).toBe(0); // another root storage counts apart, on the same client
  });

  it('maps a refused connection to a transient StorageError', async () => {
    const port = await unusedPort();
    const storage = new S3Storage({
      bucket: 'b',
      ...s3.clientOptions,
      endpoint: `http://127.0.0.1:${port}`,
      maxAttempts: 1,
    });
    const err = await storage.head('k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(isTransient(err)).toBe(true);
    expect((err as StorageError).context).toMatchObject({
      key: 'k',
      uri: 's3://b/',
      code: 'ECONNREFUSED',
    });
    storage.client.destroy();
  });
});

// --- faults s3rver cannot produce --------------------------------------------------

type Send = (command: unknown) => Promise<unknown>;

/** An S3Storage over a mocked client whose `send` is `send`. */
function mockedStorage(send: Send): { storage: S3Storage; sent: unknown[] } {
  const sent: unknown[] = [];
  const client = {
    send: async (command: unknown) => {
      sent.push(command);
      return send(command);
    },
  } as unknown as S3Client;
  // Retries back off by at most a few ms here: the mocked faults need no real waiting.
  return {
    storage: new S3Storage({ bucket: 'bkt', prefix: 'p', client, retryBaseDelayMs: 2 }),
    sent,
  };
}

/** An SDK-shaped service error. Name and message are deliberately unhelpful: only the status decides. */
function serviceError(
  status: number,
  name = 'SomeUnrelatedName',
  message = 'unrelated text',
): S3ServiceException {
  return new S3ServiceException({
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message,
  });
}

describe('S3Storage with a host clock 20 minutes slow (s3rver refuses requests signed more than 15 minutes off)', () => {
  it('the first request of each client is refused as RequestTimeTooSkewed; the SDK takes the server clock and the retry goes through', async () => {
    const client = new S3Client({
      ...s3ClientConfig(s3.clientOptions),
      systemClockOffset: -20 * 60 * 1000,
    });
    const storage = new S3Storage({ bucket: s3.bucket, prefix: `skew-${randomUUID()}/`, client });
    await storage.write('a.txt', 'written with a slow clock');
    expect(Buffer.from((await storage.read('a.txt'))!).toString()).toBe(
      'written with a slow clock',
    );
    // One refused PUT, then every request signed on the server's time.
    expect(storage.requestCounts()).toMatchObject({ put: 2, get: 1 });
  });
});

describe('S3Storage faults (fault injection: mocked S3 client)', () => {
  it('writeIfAbsent returns false on HTTP 412, decided by status code (fault injection: mocked S3 client)', async () => {
    const { storage, sent } = mockedStorage(async () => {
      throw serviceError(412);
    });
    expect(await storage.writeIfAbsent('_delta_log/00000000000000000001.json', '{}')).toBe(false);
    expect(sent).toHaveLength(1);
    const put = sent[0] as PutObjectCommand;
    expect(put).toBeInstanceOf(PutObjectCommand);
    expect(put.input).toMatchObject({
      Bucket: 'bkt',
      Key: 'p/_delta_log/00000000000000000001.json',
      IfNoneMatch: '*',
    });
  });

  it('writeIfAbsent retries a 409 ConditionalRequestConflict after a pause; a 409 that persists is a transient "not known yet" (fault injection: mocked S3 client)', async () => {
    let calls = 0;
    const { storage } = mockedStorage(async () => {
      calls++;
      if (calls === 1) throw serviceError(409, 'ConditionalRequestConflict');
      return {};
    });
    expect(await storage.writeIfAbsent('k', 'v')).toBe(true);
    expect(calls).toBe(2);
    const always409 = mockedStorage(async () => {
      throw serviceError(409);
    });
    // Another write to the key is still landing: neither "ours" nor "taken" can be said yet.
    const err = await always409.storage.writeIfAbsent('k', 'v').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(isTransient(err)).toBe(true);
    expect((err as Error).message).toMatch(
      /answered 409 ConditionalRequestConflict 3 times .*whether a write landed is not known yet/,
    );
    expect(always409.sent).toHaveLength(3);
  });

  it('retries HTTP 503, then gives up with a transient StorageError (fault injection: mocked S3 client)', async () => {
    const { storage, sent } = mockedStorage(async () => {
      throw serviceError(503);
    });
    const ops = {
      head: () => storage.head('k'),
      write: () => storage.write('k', 'v'),
      writeIfAbsent: () => storage.writeIfAbsent('k', 'v'),
      list: () => storage.listAll(),
    };
    for (const [name, op] of Object.entries(ops)) {
      sent.length = 0;
      const err = await op().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect((err as StorageError).kind).toBe('transient');
      expect((err as StorageError).message).toContain(
        `S3 storage unavailable after 6 attempts: ${name} `,
      );
      expect((err as StorageError).context).toMatchObject({
        uri: 's3://bkt/p/',
        status: 503,
        attempts: 6,
        op: name,
      });
      expect((err as StorageError).cause).toBeInstanceOf(S3ServiceException);
      expect(sent).toHaveLength(6);
    }
  });

  it('maps HTTP 403 to a terminal error that leaks nothing from the SDK message (fault injection: mocked S3 client)', async () => {
    const secretish =
      'AccessDenied for key AKIAFAKEFAKEFAKE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const { storage } = mockedStorage(async () => {
      throw serviceError(403, 'AccessDenied', secretish);
    });
    const err = (await storage.read('data/x.csv').catch((e: unknown) => e)) as StorageError;
    expect(err).toBeInstanceOf(StorageError);
    expect(err.kind).toBe('terminal');
    expect(err.message).toContain('access denied');
    expect(err.message).toContain('data/x.csv');
    expect(err.message).not.toContain('AKIA');
    expect(err.message).not.toContain('wJalr');
    expect(JSON.stringify(err.context)).not.toContain('AKIA');
  });

  it('stops a listing whose continuation token repeats (fault injection: mocked S3 client)', async () => {
    const { storage, sent } = mockedStorage(async () => ({
      Contents: [{ Key: 'p/a', Size: 1, ETag: '"e"', LastModified: new Date() }],
      IsTruncated: true,
      NextContinuationToken: 'same-token',
    }));
    const err = await storage.listAll().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).message).toContain('repeated a continuation token');
    expect(sent).toHaveLength(2);
    expect((sent[1] as ListObjectsV2Command).input.ContinuationToken).toBe('same-token');
  });

  it('reports per-key DeleteObjects errors (fault injection: mocked S3 client)', async () => {
    const { storage, sent } = mockedStorage(async () => ({
      Errors: [{ Key: 'p/locked', Code: 'AccessDenied', Message: 'no' }],
    }));
    const err = (await storage.delete(['ok', 'locked']).catch((e: unknown) => e)) as StorageError;
    expect(err).toBeInstanceOf(StorageError);
    expect(err.kind).toBe('terminal');
    expect(err.context.failures).toEqual([{ key: 'locked', code: 'AccessDenied' }]);
    expect((sent[0] as DeleteObjectsCommand).input.Delete?.Objects).toEqual([
      { Key: 'p/ok' },
      { Key: 'p/locked' },
    ]);
  });

  it('head returns null on 404 (fault injection: mocked S3 client)', async () => {
    const { storage, sent } = mockedStorage(async () => {
      throw serviceError(404, 'NotFound');
    });
    expect(await storage.head('missing')).toBeNull();
    expect(sent[0]).toBeInstanceOf(HeadObjectCommand);
  });
});

/** A TCP port nothing listens on (bound, then released). */
async function unusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
