/**
 * Checksums end to end. Reads: every byte a whole-object read hands out is hashed, across
 * resumes, against the object's full-object checksum (the fault proxy answers S3's, see
 * test/helpers/checksum-emulation.ts) or, without one, the ETag of a single-part object as its
 * MD5 (s3rver's own); a mismatch is never a success. Uploads: each carries a checksum the store
 * verifies, so a body damaged on its way is refused and sent again. The storage counts what it
 * checked, by kind. On moto's S3 server (the interop run), a multipart upload's composite and
 * full-object checksums, as moto computes them.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors.js';
import { Upload } from '@aws-sdk/lib-storage';
import { Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { S3Storage } from '../../src/storage/s3.js';
import { UploadChecksumError } from '../../src/storage/s3/upload-check.js';
import { PartNumberIgnoredError } from '../../src/storage/s3/checksums.js';
import type { S3StorageOptions } from '../../src/storage/s3.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import type { FaultProxy } from '../helpers/fault-proxy.js';
import { startInconsistentS3 } from '../helpers/inconsistent-s3.js';
import type { InconsistentS3 } from '../helpers/inconsistent-s3.js';
import { MOTO_ENDPOINT } from '../helpers/moto.js';
import { FAST_RETRIES, startProxiedMoto, startProxiedS3 } from './fault-setup.js';
import type { ProxiedS3, ProxiedStore } from './fault-setup.js';

let env: ProxiedS3;
/** The proxy without checksum emulation: s3rver as it is, whose ETags are MD5s. */
let plain: FaultProxy;
let mock: InconsistentS3;
let tmp: string;
const made: S3Storage[] = [];
beforeAll(async () => {
  env = await startProxiedS3();
  plain = await startFaultProxy({ target: env.s3.endpoint, emulateConditionals: true });
  mock = await startInconsistentS3('mock');
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-checksums-'));
});
afterAll(async () => {
  for (const s of made) s.client.destroy();
  await mock?.stop();
  await plain?.stop();
  await env?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const OBJECT = randomBytes(64 * 1024);

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A storage on the mock S3. */
function onMock(extra: Partial<S3StorageOptions> = {}): S3Storage {
  const s = new S3Storage({
    bucket: 'mock',
    endpoint: mock.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'mock', secretAccessKey: 'mock' },
    ...FAST_RETRIES,
    ...extra,
  });
  made.push(s);
  return s;
}

type Whole = (s: S3Storage, key: string) => Promise<Buffer>;
const WHOLE: Record<string, Whole> = {
  read: async (s, key) => Buffer.from((await s.read(key))!),
  download: async (s, key) => {
    const dest = path.join(await fsp.mkdtemp(path.join(tmp, 'dl-')), 'o.bin');
    await s.download(key, dest);
    expect(await fsp.readdir(path.dirname(dest))).toEqual(['o.bin']);
    return fsp.readFile(dest);
  },
};

/** Proxies and what they check a read against. */
const STORES = {
  'CRC64NVME (the proxy answers S3 checksums)': {
    proxy: () => env.proxy,
    endpoint: () => env.proxy.endpoint,
    kind: 'CRC64NVME',
  },
  'ETag MD5 (s3rver as it is)': {
    proxy: () => plain,
    endpoint: () => plain.endpoint,
    kind: 'ETag MD5',
  },
} as const;

describe('whole-object reads are checked (fault injection: proxy in front of s3rver)', () => {
  for (const [storeName, store] of Object.entries(STORES)) {
    for (const [name, run] of Object.entries(WHOLE)) {
      it(`fault injection: ${name} of a body with a flipped byte fails its ${storeName} check and reads again`, async () => {
        const storage = env.storage({ endpoint: store.endpoint() });
        await env.direct(storage.prefix).write('o.bin', OBJECT);
        const rule = store
          .proxy()
          .faultNext('corruptBody', { method: 'GET', path: `${storage.prefix}o.bin` });
        const got = await run(storage, 'o.bin');
        expect(rule.hits).toBe(1);
        expect(got.length).toBe(OBJECT.length);
        expect(got.equals(OBJECT)).toBe(true);
        expect(storage.requestCounts().get).toBe(2);
        expect(storage.checksumCounts().reads).toEqual({ [store.kind]: 1 });
      });

      it(`fault injection: ${name} of a first answer three quarters long (a short object, its length theirs) fails its ${storeName} check and reads again`, async () => {
        const storage = env.storage({ endpoint: store.endpoint() });
        await env.direct(storage.prefix).write('o.bin', OBJECT);
        const rule = store
          .proxy()
          .faultNext('shortObject', { method: 'GET', path: `${storage.prefix}o.bin` });
        const got = await run(storage, 'o.bin');
        expect(rule.hits).toBe(1);
        expect(got.length).toBe(OBJECT.length);
        expect(got.equals(OBJECT)).toBe(true);
      });

      it(`fault injection: ${name} whose resumed range has a flipped byte is caught by the ${storeName} check over the whole (resumes included)`, async () => {
        const storage = env.storage({ endpoint: store.endpoint() });
        await env.direct(storage.prefix).write('o.bin', OBJECT);
        const match = { method: 'GET', path: `${storage.prefix}o.bin` };
        store.proxy().faultNext('cutBody', match);
        const rule = store.proxy().faultNext('corruptBody', match);
        const got = await run(storage, 'o.bin');
        expect(rule.hits).toBe(1);
        expect(got.equals(OBJECT)).toBe(true);
        // The first answer, its resume (damaged), and a fresh read.
        expect(storage.requestCounts().get).toBe(3);
      });
    }

    it(`fault injection: readStream of a body with a flipped byte fails at its end with the ${storeName} mismatch (its bytes were handed out)`, async () => {
      const storage = env.storage({ endpoint: store.endpoint() });
      await env.direct(storage.prefix).write('o.bin', OBJECT);
      store.proxy().faultNext('corruptBody', { method: 'GET', path: `${storage.prefix}o.bin` });
      const err = await drain(await storage.readStream('o.bin')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect((err as StorageError).kind).toBe('transient');
      expect((err as StorageError).message).toMatch(
        new RegExp(
          `^\\[storage\\] S3 object "o\\.bin" in s3://.+: the 65536 bytes read do not match its ${store.kind} checksum \\S+ \\(they hash to \\S+\\)`,
        ),
      );
      expect((err as StorageError).context).toMatchObject({
        checksum: store.kind,
        startOver: true,
      });
    });
  }

  it('a ranged read has nothing to be checked against and is not counted', async () => {
    const storage = env.storage({ endpoint: plain.endpoint });
    await env.direct(storage.prefix).write('o.bin', OBJECT);
    expect(
      Buffer.from((await storage.read('o.bin', { start: 10, end: 99 }))!).equals(
        OBJECT.subarray(10, 100),
      ),
    ).toBe(true);
    expect(storage.checksumCounts().reads).toEqual({});
    expect(Buffer.from((await storage.read('o.bin', { start: 0 }))!).equals(OBJECT)).toBe(true);
    expect(storage.checksumCounts().reads).toEqual({ 'ETag MD5': 1 });
  });

  it('an object uploaded with SHA256 is read back checked against its SHA256', async () => {
    const storage = env.storage({ uploadChecksum: 'SHA256' });
    await storage.write('sha.bin', OBJECT);
    expect(Buffer.from((await storage.read('sha.bin'))!).equals(OBJECT)).toBe(true);
    expect(storage.checksumCounts()).toEqual({ reads: { SHA256: 1 }, uploads: { SHA256: 1 } });
  });
});

describe('ETags that are not MD5s (mock S3)', () => {
  const notMd5 = `"${createHash('md5').update('something else').digest('hex')}"`;

  it('mock S3: an SSE-KMS object (its ETag not its MD5) reads without an ETag check', async () => {
    mock.put('kms.bin', OBJECT, {
      etag: notMd5,
      headers: { 'x-amz-server-side-encryption': 'aws:kms' },
    });
    const s = onMock();
    expect(Buffer.from((await s.read('kms.bin'))!).equals(OBJECT)).toBe(true);
    expect(s.checksumCounts().reads).toEqual({ none: 1 });
  });

  it('mock S3: a composite checksum (…-3) on a store whose HEAD ignores partNumber fails the read at once (terminal), naming the key, the part and what the store answered; never reads it unchecked', async () => {
    mock.put('composite.bin', OBJECT, {
      etag: `${notMd5.slice(0, -1)}-3"`,
      headers: { 'x-amz-checksum-crc32': 'AAAAAA==-3', 'x-amz-checksum-type': 'COMPOSITE' },
    });
    const before = { ...mock.counts };
    const err = await onMock()
      .read('composite.bin')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PartNumberIgnoredError);
    const e = err as PartNumberIgnoredError;
    expect(e.kind).toBe('terminal');
    expect(e.context).toMatchObject({
      key: 'composite.bin',
      parts: 3,
      size: 65536,
      checksum: 'CRC32 composite',
    });
    expect(e.message).toMatch(
      /^\[storage\] S3 object "composite\.bin" in s3:\/\/mock\/ has a CRC32 composite checksum of 3 parts, checked part by part: the store answered the HEAD of part [1-3] \(partNumber=[1-3]\) with the whole object's 65536 bytes and no x-amz-mp-parts-count, so it ignores partNumber/,
    );
    // One GET, one batch of part HEADs: not retried.
    expect(mock.counts.get - before.get).toBe(1);
    expect(mock.counts.head - before.head).toBeLessThanOrEqual(3);
  });

  it('mock S3: a store whose 32-hex ETags are not MD5s fails every read after maxAttempts, naming storage.etagChecksum; with etagChecksum false it reads', async () => {
    mock.put('odd.bin', OBJECT, { etag: notMd5 });
    const err = await onMock()
      .read('odd.bin')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).message).toMatch(
      /do not match its ETag MD5 checksum .*set storage\.etagChecksum: false/,
    );
    expect(mock.counts.get).toBeGreaterThanOrEqual(FAST_RETRIES.maxAttempts!);
    const off = onMock({ etagChecksum: false });
    expect(Buffer.from((await off.read('odd.bin'))!).equals(OBJECT)).toBe(true);
    expect(off.checksumCounts().reads).toEqual({ none: 1 });
  });
});

describe('uploads carry a checksum the store verifies (fault injection: proxy in front of s3rver, S3 checksums emulated)', () => {
  const BIG = randomBytes(5 * 1024 * 1024 + 100);
  beforeAll(async () => {
    await fsp.writeFile(path.join(tmp, 'small.bin'), OBJECT);
    await fsp.writeFile(path.join(tmp, 'big-up.bin'), BIG);
  });

  const UPLOADS: Record<
    string,
    {
      key: string;
      body: () => Buffer;
      match: (prefix: string) => RegExp;
      run: (s: S3Storage) => Promise<unknown>;
    }
  > = {
    write: {
      key: 'w.bin',
      body: () => OBJECT,
      match: (p) => new RegExp(`/${p}w\\.bin\\?`),
      run: (s) => s.write('w.bin', OBJECT),
    },
    writeIfAbsent: {
      key: 'c.json',
      body: () => OBJECT,
      match: (p) => new RegExp(`/${p}c\\.json\\?`),
      run: async (s) => expect(await s.writeIfAbsent('c.json', OBJECT)).toBe(true),
    },
    'upload (one PUT)': {
      key: 'u.bin',
      body: () => OBJECT,
      match: (p) => new RegExp(`/${p}u\\.bin\\?`),
      run: (s) => s.upload('u.bin', path.join(tmp, 'small.bin')),
    },
    'upload (multipart, part 2)': {
      key: 'm.bin',
      body: () => BIG,
      match: (p) => new RegExp(`/${p}m\\.bin\\?partNumber=2`),
      run: (s) => s.upload('m.bin', path.join(tmp, 'big-up.bin')),
    },
  };

  for (const checksum of ['CRC64NVME', 'MD5'] as const) {
    for (const [name, up] of Object.entries(UPLOADS)) {
      it(`fault injection: ${name} (${checksum}) whose body is damaged on the way is refused by the store (BadDigest) and sent again`, async () => {
        const storage = env.storage({
          uploadChecksum: checksum,
          ...(name.includes('multipart') ? { idleTimeoutMs: 2_000 } : {}),
        });
        const rule = env.proxy.faultNext('corruptBody', {
          method: 'PUT',
          path: up.match(storage.prefix),
        });
        await up.run(storage);
        expect(rule.hits).toBe(1);
        const stored = Buffer.from((await env.direct(storage.prefix).read(up.key))!);
        expect(stored.length).toBe(up.body().length);
        expect(stored.equals(up.body())).toBe(true);
        expect(env.proxy.log.some((r) => r.fault === 'corruptBody' && r.status === 400)).toBe(true);
        // The answer checked: the store's checksum (its CompleteMultipartUpload's too), or the
        // ETag as the MD5 of a single-part object; s3rver's multipart ETags are not `…-N`.
        const checked =
          checksum === 'CRC64NVME'
            ? checksum
            : name.includes('multipart')
              ? 'not available'
              : 'ETag MD5';
        expect(storage.checksumCounts().uploads).toEqual({ [checked]: 1 });
      });
    }
  }

  it('fault injection: with uploadChecksum off the store cannot tell, and keeps the damaged body (what the checksum prevents)', async () => {
    const storage = env.storage({ uploadChecksum: 'off' });
    env.proxy.faultNext('corruptBody', {
      method: 'PUT',
      path: new RegExp(`/${storage.prefix}off\\.bin\\?`),
    });
    await storage.write('off.bin', OBJECT);
    const stored = Buffer.from((await env.direct(storage.prefix).read('off.bin'))!);
    expect(stored.length).toBe(OBJECT.length);
    expect(stored.equals(OBJECT)).toBe(false);
    expect(storage.checksumCounts().uploads).toEqual({ none: 1 });
  });
});

describe('what the store says it stored is compared with what was sent (fault injection: proxy in front of s3rver)', () => {
  /** Three parts: 5 MiB, 5 MiB and 7 bytes. */
  const BIG = randomBytes(10 * 1024 * 1024 + 7);
  beforeAll(async () => {
    await fsp.writeFile(path.join(tmp, 'small-v.bin'), OBJECT);
    await fsp.writeFile(path.join(tmp, 'big-v.bin'), BIG);
  });

  const CASES = {
    write: {
      key: 'w.bin',
      body: () => OBJECT,
      part: '',
      run: (s: S3Storage) => s.write('w.bin', OBJECT),
      removed: 'deleted',
    },
    writeIfAbsent: {
      key: 'c.json',
      body: () => OBJECT,
      part: '',
      run: (s: S3Storage) => s.writeIfAbsent('c.json', OBJECT),
      removed: 'kept',
    },
    'upload (one PUT)': {
      key: 'u.bin',
      body: () => OBJECT,
      part: '',
      run: (s: S3Storage) => s.upload('u.bin', path.join(tmp, 'small-v.bin')),
      removed: 'deleted',
    },
    'upload (multipart, part 2 of 3)': {
      key: 'm.bin',
      body: () => BIG,
      part: 'partNumber=2',
      run: (s: S3Storage) => s.upload('m.bin', path.join(tmp, 'big-v.bin')),
      removed: 'deleted',
    },
  } as const;

  for (const checksum of ['CRC64NVME', 'CRC32C'] as const) {
    // One algorithm each for the multipart cases, which hash 10 MiB several times.
    const cases = Object.entries(CASES).filter(
      ([name]) => checksum === 'CRC64NVME' || !name.includes('multipart'),
    );
    for (const [name, c] of cases) {
      it(`fault injection: ${name} (${checksum}) whose bytes the store damages after checking them fails naming the key and both checksums; the object is ${c.removed}`, async () => {
        const storage = env.storage({ uploadChecksum: checksum, idleTimeoutMs: 2_000 });
        const rule = env.proxy.faultNext('corruptStored', {
          method: 'PUT',
          path: new RegExp(`/${storage.prefix}${c.key.replace('.', '\\.')}\\?${c.part}`),
        });
        const err = await c.run(storage).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(rule.hits).toBe(1);
        expect(err).toBeInstanceOf(UploadChecksumError);
        const e = err as UploadChecksumError;
        expect(e.kind).toBe('terminal');
        expect(e.context).toMatchObject({ key: c.key, checksum, removed: c.removed });
        const { sent, stored } = e.context as { sent: string; stored: string };
        expect(sent).not.toBe(stored);
        expect(e.message).toContain(`"${c.key}"`);
        expect(e.message).toContain(
          `the store answered the ${checksum} checksum ${stored} for what it stored, where the bytes sent have ${sent}`,
        );
        // What was sent hashes to `sent`: the local whole-object checksum is the bytes' own.
        const hash = new (checksum === 'CRC64NVME' ? Crc64Nvme : Crc32c)();
        hash.update(c.body());
        expect(Buffer.from(await hash.digest()).toString('base64')).toBe(sent);
        const left = await env.direct(storage.prefix).read(c.key);
        if (c.removed === 'deleted') expect(left).toBeNull();
        else expect(Buffer.from(left!).equals(c.body())).toBe(false);
        expect(storage.checksumCounts().uploads).toEqual({});
      });
    }
  }

  for (const checksum of ['CRC32C'] as const) {
    it(`a multipart upload (${checksum}) is a full-object checksum, the store's answer matches the parts' CRCs combined, and it reads back checked against it`, async () => {
      const storage = env.storage({ uploadChecksum: checksum });
      await storage.upload('m.bin', path.join(tmp, 'big-v.bin'));
      expect(storage.checksumCounts().uploads).toEqual({ [checksum]: 1 });
      // The CompleteMultipartUpload answered the checksum: no HEAD was needed.
      expect(storage.requestCounts().head).toBe(0);
      expect(Buffer.from((await storage.read('m.bin'))!).equals(BIG)).toBe(true);
      expect(storage.checksumCounts().reads).toEqual({ [checksum]: 1 });
    });
  }

  it('fault injection: a single-part upload (MD5) whose bytes the store damages fails its ETag check (the ETag is the MD5 of what it stored)', async () => {
    const storage = env.storage({ uploadChecksum: 'MD5' });
    env.proxy.faultNext('corruptStored', {
      method: 'PUT',
      path: new RegExp(`/${storage.prefix}u\\.bin\\?`),
    });
    const err = await storage
      .upload('u.bin', path.join(tmp, 'small-v.bin'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UploadChecksumError);
    expect((err as UploadChecksumError).context).toMatchObject({
      checksum: 'ETag MD5',
      sent: createHash('md5').update(OBJECT).digest('hex'),
    });
    expect((err as UploadChecksumError).message).toMatch(/set storage\.etagChecksum: false/);
  });

  it('s3rver as it is (no checksums answered): a single PUT is checked by its ETag, a multipart upload is "not available", never verified', async () => {
    const storage = env.storage({ endpoint: plain.endpoint });
    await storage.upload('u.bin', path.join(tmp, 'small-v.bin'));
    await storage.upload('m.bin', path.join(tmp, 'big-v.bin'));
    expect(storage.checksumCounts().uploads).toEqual({ 'ETag MD5': 1, 'not available': 1 });
    // The multipart upload asked the store again with a HEAD (x-amz-checksum-mode), in vain.
    expect(storage.requestCounts().head).toBe(1);
  });

  it('fault injection: s3rver as it is cannot show a multipart upload damaged after its parts were checked: counted "not available" (what the store cannot verify)', async () => {
    const storage = env.storage({ endpoint: plain.endpoint });
    plain.faultNext('corruptStored', {
      method: 'PUT',
      path: new RegExp(`/${storage.prefix}m\\.bin\\?partNumber=2`),
    });
    await storage.upload('m.bin', path.join(tmp, 'big-v.bin'));
    expect(storage.checksumCounts().uploads).toEqual({ 'not available': 1 });
    expect(Buffer.from((await env.direct(storage.prefix).read('m.bin'))!).equals(BIG)).toBe(false);
  });
});

if (MOTO_ENDPOINT) {
  const endpoint = MOTO_ENDPOINT;
  describe('multipart checksums on moto: composite (…-N) and full-object', () => {
    let moto: ProxiedStore & Awaited<ReturnType<typeof startProxiedMoto>>;
    /** 11 MiB + 7: three parts of 5 MiB, 5 MiB and 1 MiB + 7. */
    const BIG = randomBytes(11 * 1024 * 1024 + 7);
    beforeAll(async () => {
      moto = await startProxiedMoto(endpoint);
    });
    afterAll(async () => {
      await moto?.stop();
    });

    /** A multipart upload as another writer makes it (boto3, the AWS CLI, lib-storage): 5 MiB parts, the SDK's checksum of each. */
    async function uploadAsAnotherWriter(
      prefix: string,
      key: string,
      checksum: 'CRC32' | 'CRC32C' | 'SHA256' | 'SHA1',
      type?: 'FULL_OBJECT',
    ): Promise<void> {
      const params = {
        Bucket: moto.bucket,
        Key: `${prefix}${key}`,
        Body: BIG,
        ChecksumAlgorithm: checksum,
        ...(type ? { ChecksumType: type } : {}),
      };
      await new Upload({ client: moto.moto.client, params, partSize: 5 * 1024 * 1024 }).done();
    }

    for (const checksum of ['CRC32', 'CRC32C', 'SHA256', 'SHA1'] as const) {
      for (const [name, run] of Object.entries(WHOLE)) {
        it(`moto: ${name} of a three-part object with a composite ${checksum} checksum (…-3) is checked against it`, async () => {
          const storage = moto.storage({}, `mc-${randomUUID()}/`);
          await uploadAsAnotherWriter(storage.prefix, 'c.bin', checksum);
          const got = await run(storage, 'c.bin');
          expect(got.equals(BIG)).toBe(true);
          expect(storage.checksumCounts().reads).toEqual({ [`${checksum} composite`]: 1 });
          // One GET and a HEAD of each part for its size.
          expect(storage.requestCounts()).toMatchObject({ get: 1, head: 3 });
        });
      }
    }

    it('fault injection: a read of a composite-checksum object with a flipped byte fails its check and reads again (proxy in front of moto)', async () => {
      const storage = moto.storage({}, `mc-${randomUUID()}/`);
      await uploadAsAnotherWriter(storage.prefix, 'c.bin', 'CRC32');
      const rule = moto.proxy.faultNext('corruptBody', {
        method: 'GET',
        path: `/${moto.bucket}/${storage.prefix}c.bin`,
      });
      expect(Buffer.from((await storage.read('c.bin'))!).equals(BIG)).toBe(true);
      expect(rule.hits).toBe(1);
      expect(storage.requestCounts().get).toBe(2);
      expect(storage.checksumCounts().reads).toEqual({ 'CRC32 composite': 1 });
    });

    it('fault injection: a readStream of a composite-checksum object with a flipped byte fails at its end naming the composite check', async () => {
      const storage = moto.storage({}, `mc-${randomUUID()}/`);
      await uploadAsAnotherWriter(storage.prefix, 'c.bin', 'SHA256');
      moto.proxy.faultNext('corruptBody', {
        method: 'GET',
        path: `/${moto.bucket}/${storage.prefix}c.bin`,
      });
      const err = await drain(await storage.readStream('c.bin')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect((err as StorageError).message).toMatch(
        /the 11534343 bytes read do not match its SHA256 composite checksum \S+-3 \(they hash to \S+-3\)/,
      );
    });

    describe("tidemark's own multipart uploads on moto: the store's full-object checksum (HEAD, x-amz-checksum-mode) against the parts' CRCs combined", () => {
      beforeAll(async () => {
        await fsp.writeFile(path.join(tmp, 'moto-big.bin'), BIG);
        await fsp.writeFile(path.join(tmp, 'moto-small.bin'), OBJECT);
      });

      for (const checksum of ['CRC64NVME', 'CRC32', 'CRC32C'] as const) {
        it(`moto: a three-part upload (${checksum}, FULL_OBJECT) is verified against moto's full-object ${checksum} and reads back checked against it`, async () => {
          const storage = moto.storage({ uploadChecksum: checksum }, `mu-${randomUUID()}/`);
          await storage.upload('u.bin', path.join(tmp, 'moto-big.bin'));
          expect(storage.checksumCounts().uploads).toEqual({ [checksum]: 1 });
          // moto's CompleteMultipartUpload answers no checksum: a HEAD asked for it.
          expect(storage.requestCounts().head).toBe(1);
          expect(Buffer.from((await storage.read('u.bin'))!).equals(BIG)).toBe(true);
          expect(storage.checksumCounts().reads).toEqual({ [checksum]: 1 });
        });
      }

      it('moto: a three-part upload with SHA256 is verified against its composite checksum (…-3)', async () => {
        const storage = moto.storage({ uploadChecksum: 'SHA256' }, `mu-${randomUUID()}/`);
        await storage.upload('u.bin', path.join(tmp, 'moto-big.bin'));
        expect(storage.checksumCounts().uploads).toEqual({ 'SHA256 composite': 1 });
      });

      it('moto: a single PUT is verified against the checksum moto answers', async () => {
        const storage = moto.storage({}, `mu-${randomUUID()}/`);
        await storage.upload('s.bin', path.join(tmp, 'moto-small.bin'));
        await storage.write('w.bin', OBJECT);
        expect(await storage.writeIfAbsent('c.json', OBJECT)).toBe(true);
        expect(storage.checksumCounts().uploads).toEqual({ CRC64NVME: 3 });
        expect(storage.requestCounts().head).toBe(0);
      });

      it('fault injection: a part moto stores with a flipped byte under its original checksum (proxy in front of moto) fails the upload naming both full-object checksums; the object is deleted', async () => {
        const storage = moto.storage(
          { uploadChecksum: 'CRC64NVME', idleTimeoutMs: 2_000 },
          `mu-${randomUUID()}/`,
        );
        const rule = moto.proxy.faultNext('corruptStored', {
          method: 'PUT',
          path: new RegExp(`/${storage.prefix}u\\.bin\\?partNumber=2`),
        });
        const err = await storage
          .upload('u.bin', path.join(tmp, 'moto-big.bin'))
          .catch((e: unknown) => e);
        expect(rule.hits).toBe(1);
        expect(err).toBeInstanceOf(UploadChecksumError);
        expect((err as UploadChecksumError).context).toMatchObject({
          key: 'u.bin',
          checksum: 'CRC64NVME',
          removed: 'deleted',
        });
        expect(await moto.direct(storage.prefix).head('u.bin')).toBeNull();
      });
    });

    for (const checksum of ['CRC32', 'CRC32C'] as const) {
      it(`moto: a three-part object with a full-object ${checksum} checksum is checked against it`, async () => {
        const storage = moto.storage({}, `mf-${randomUUID()}/`);
        await uploadAsAnotherWriter(storage.prefix, 'f.bin', checksum, 'FULL_OBJECT');
        expect(Buffer.from((await storage.read('f.bin'))!).equals(BIG)).toBe(true);
        expect(storage.checksumCounts().reads).toEqual({ [checksum]: 1 });
        expect(storage.requestCounts()).toMatchObject({ get: 1 });
      });
    }
  });
}
