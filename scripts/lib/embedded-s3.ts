/**
 * An embedded S3-compatible server (s3rver) on 127.0.0.1 with a random port, for the demo and
 * the tests. s3rver is a development dependency: production tidemark talks to AWS S3 or MinIO.
 *
 * Four s3rver 3.7.1 bugs are patched here, in this process only:
 * - its continuation tokens use single DES, which OpenSSL 3 (Node 17+) no longer offers, so every
 *   truncated listing failed with HTTP 500: DES is mapped to triple DES with three equal keys,
 *   which computes exactly the same thing;
 * - a delimiter listing missed a folder that holds only deeper folders (`2026/11/01/a.csv` gave
 *   no `2026/` at the root), which hides `{yyyy}/{mm}/{dd}` partitions: common prefixes are
 *   computed from the full listing instead;
 * - a PUT (and an upload part) was answered before its file write had finished, so a GET right
 *   after it could read a shorter file than the object (a correct prefix, its size that of the
 *   prefix): the object's file is now written in full under a temporary name, then renamed, before
 *   the answer, as S3 makes an object visible only whole;
 * - a Range on an empty object was answered 206 `bytes 0-0/0` with a length of 1 and no byte, so
 *   the answer never ended: it is refused as unsatisfiable (416), as S3 does.
 * Still unlike S3/MinIO: it ignores `If-None-Match: *` on PUT (so it cannot host a table that
 * several writers share; tidemark's probe detects this), and `Range: bytes=0-0` returns everything.
 */
import crypto from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver from 's3rver';

const require = createRequire(import.meta.url);

export interface EmbeddedS3 {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  region: string;
  /** s3rver's fixed, public credentials (they protect nothing; never use them elsewhere). */
  credentials: { accessKeyId: string; secretAccessKey: string };
  stop(): Promise<void>;
}

export interface EmbeddedS3Options {
  buckets: string[];
  /** Folder for the objects; default a fresh temp folder, removed on stop. */
  directory?: string;
}

/** s3rver's built-in credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

function allowDesContinuationTokens(): void {
  const mutable = crypto as unknown as Record<string, unknown> & { __tidemarkDesShim?: boolean };
  if (mutable.__tidemarkDesShim) return;
  const wrap = (original: (...args: any[]) => unknown) =>
    function (this: unknown, algorithm: string, key: Buffer, iv: Buffer, ...rest: unknown[]) {
      if (algorithm === 'des' && key.length === 8)
        return original.call(this, 'des-ede3-cbc', Buffer.concat([key, key, key]), iv, ...rest);
      return original.call(this, algorithm, key, iv, ...rest);
    };
  mutable['createCipheriv'] = wrap(crypto.createCipheriv);
  mutable['createDecipheriv'] = wrap(crypto.createDecipheriv);
  mutable.__tidemarkDesShim = true;
}

interface ListOptions {
  delimiter?: string;
  startAfter?: string;
  prefix?: string;
  maxKeys?: number;
}
interface ListResult {
  objects: Array<{ key: string }>;
  commonPrefixes: string[];
  isTruncated: boolean;
}

function fixNestedCommonPrefixes(): void {
  const FilesystemStore = require('s3rver/lib/stores/filesystem.js') as {
    prototype: {
      listObjects(bucket: string, o: ListOptions): Promise<ListResult>;
      __tidemarkFixed?: boolean;
    };
  };
  const proto = FilesystemStore.prototype;
  if (proto.__tidemarkFixed) return;
  const original = proto.listObjects;
  proto.listObjects = async function (bucket: string, options: ListOptions): Promise<ListResult> {
    const { delimiter = '', prefix = '', maxKeys = Infinity } = options;
    if (!delimiter) return original.call(this, bucket, options);
    // List everything below the prefix (no pruning), then group by the delimiter as S3 does.
    const all = await original.call(this, bucket, { ...options, delimiter: '', maxKeys: Infinity });
    const commonPrefixes = new Set<string>();
    const objects: ListResult['objects'] = [];
    let isTruncated = false;
    for (const object of all.objects) {
      const idx = object.key.slice(prefix.length).indexOf(delimiter);
      if (idx !== -1) {
        if (!isTruncated)
          commonPrefixes.add(object.key.slice(0, prefix.length + idx + delimiter.length));
        continue;
      }
      if (objects.length < maxKeys) objects.push(object);
      else isTruncated = true;
    }
    return { objects, commonPrefixes: [...commonPrefixes].sort(), isTruncated };
  };
  proto.__tidemarkFixed = true;
}

interface StoredObject {
  bucket: string;
  key: string;
  metadata: unknown;
  content: Buffer | Readable;
}

/** Write `content` to `file` in full (through a temporary name); its size and MD5 (hex). */
async function writeWhole(
  file: string,
  content: Buffer | Readable,
): Promise<{ size: number; md5: string }> {
  const md5 = crypto.createHash('md5');
  let size = 0;
  const tally = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      md5.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  const tmp = `${file}.tmp-${crypto.randomUUID()}`;
  try {
    await pipeline(
      Buffer.isBuffer(content) ? Readable.from([content]) : content,
      tally,
      createWriteStream(tmp),
    );
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  return { size, md5: md5.digest('hex') };
}

function answerPutsAfterTheirWrite(): void {
  const FilesystemStore = require('s3rver/lib/stores/filesystem.js') as {
    prototype: {
      getResourcePath(bucket: string, key?: string, resource?: string): string;
      putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
      putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
      putPart(
        bucket: string,
        uploadId: string,
        partNumber: number,
        content: Readable,
      ): Promise<{ size: number; md5: string }>;
      getObject(
        bucket: string,
        key: string,
        options?: { start?: number; end?: number },
      ): Promise<unknown>;
      getMetadata(bucket: string, key: string): Promise<Record<string, unknown>>;
      __tidemarkWholeWrites?: boolean;
    };
  };
  const proto = FilesystemStore.prototype;
  if (proto.__tidemarkWholeWrites) return;
  proto.putObject = async function (object) {
    const file = this.getResourcePath(object.bucket, object.key, 'object');
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const written = await writeWhole(file, object.content);
    await this.putMetadata(object.bucket, object.key, object.metadata, written.md5);
    return written;
  };
  proto.putPart = async function (bucket, uploadId, partNumber, content) {
    const file = path.join(
      this.getResourcePath(bucket, undefined, 'uploads'),
      uploadId,
      String(partNumber),
    );
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const written = await writeWhole(file, content);
    await fsp.writeFile(`${file}.md5`, written.md5);
    return written;
  };
  const getObject = proto.getObject;
  proto.getObject = async function (bucket, key, options) {
    const ranged =
      options !== undefined && (options.start !== undefined || options.end !== undefined);
    if (!ranged) return getObject.call(this, bucket, key, options);
    const size = await this.getMetadata(bucket, key).then(
      (m) => Number(m['content-length']),
      () => undefined,
    );
    // Start past the end: getObject answers the unsatisfiable range itself (416).
    return getObject.call(this, bucket, key, size === 0 ? { ...options, start: 1 } : options);
  };
  proto.__tidemarkWholeWrites = true;
}

/** Start the server with the given buckets. */
export async function startEmbeddedS3(opts: EmbeddedS3Options): Promise<EmbeddedS3> {
  allowDesContinuationTokens();
  fixNestedCommonPrefixes();
  answerPutsAfterTheirWrite();
  const ownDirectory = opts.directory === undefined;
  const directory =
    opts.directory ?? (await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-s3rver-')));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: opts.buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1', // s3rver's continuation tokens only accept us-east-1
    credentials: S3RVER_CREDENTIALS,
    async stop() {
      await server.close();
      if (ownDirectory) await fsp.rm(directory, { recursive: true, force: true });
    },
  };
}
