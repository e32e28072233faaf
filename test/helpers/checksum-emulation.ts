/**
 * S3's checksums, for the fault proxy in front of s3rver (which checks none): an upload whose
 * body does not match the checksum it carries (`x-amz-checksum-<algorithm>` or Content-MD5) is
 * refused with 400 BadDigest before the store sees it, and a whole-object GET asked with
 * `x-amz-checksum-mode: ENABLED` is answered with a full-object checksum of the object: the
 * algorithm its PutObject (or CreateMultipartUpload) named, else CRC64NVME, which AWS keeps for
 * every object written since 2025. Like AWS, a PutObject's answer carries the checksum of the
 * bytes stored, and so does a CompleteMultipartUpload's (in its XML) for a full-object checksum
 * (CRC64NVME, or CRC32/CRC32C created with `x-amz-checksum-type: FULL_OBJECT`), computed from the
 * object the store then holds.
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { Sha1, Sha256 } from '@aws-sdk/checksums/sha';

const HASHERS = {
  crc64nvme: Crc64Nvme,
  crc32: Crc32,
  crc32c: Crc32c,
  sha1: Sha1,
  sha256: Sha256,
} as const;
type Algorithm = keyof typeof HASHERS;

async function checksumOf(algorithm: Algorithm, body: Uint8Array): Promise<string> {
  const hash = new HASHERS[algorithm]();
  hash.update(body);
  return Buffer.from(await hash.digest()).toString('base64');
}

/** The algorithm named by an `x-amz-checksum-<algorithm>` header (or x-amz-checksum-algorithm). */
function namedAlgorithm(headers: http.IncomingHttpHeaders): Algorithm | undefined {
  const named = headers['x-amz-checksum-algorithm'] ?? headers['x-amz-sdk-checksum-algorithm'];
  if (typeof named === 'string' && named.toLowerCase() in HASHERS)
    return named.toLowerCase() as Algorithm;
  return (Object.keys(HASHERS) as Algorithm[]).find(
    (a) => typeof headers[`x-amz-checksum-${a}`] === 'string',
  );
}

export class ChecksumEmulation {
  /** Object path → the algorithm its upload named (null: a composite multipart checksum, not answered). */
  private readonly algorithms = new Map<string, Algorithm | null>();

  /**
   * For a PUT (an object or a part) or a CreateMultipartUpload: null when its body matches what it
   * carries (remembering the object's algorithm), else the BadDigest error to answer.
   */
  async checkUpload(
    req: http.IncomingMessage,
    pathname: string,
    query: URLSearchParams,
    body: Buffer,
  ): Promise<{ code: string; message: string } | null> {
    const algorithm = namedAlgorithm(req.headers);
    if (req.method === 'POST' && query.has('uploads')) {
      // CRC64NVME makes a full-object checksum of a multipart upload, and so do CRC32 and CRC32C
      // when asked to; the others a composite one.
      const fullObject =
        algorithm === 'crc64nvme' ||
        (String(req.headers['x-amz-checksum-type']).toUpperCase() === 'FULL_OBJECT' &&
          algorithm?.startsWith('crc'));
      if (algorithm) this.algorithms.set(pathname, fullObject ? algorithm : null);
      else this.algorithms.delete(pathname);
      return null;
    }
    if (req.method !== 'PUT') return null;
    const md5 = req.headers['content-md5'];
    if (typeof md5 === 'string' && createHash('md5').update(body).digest('base64') !== md5) {
      return {
        code: 'BadDigest',
        message: 'The Content-MD5 you specified did not match what we received.',
      };
    }
    const sent = algorithm ? req.headers[`x-amz-checksum-${algorithm}`] : undefined;
    if (algorithm && typeof sent === 'string' && (await checksumOf(algorithm, body)) !== sent) {
      return {
        code: 'BadDigest',
        message: `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`,
      };
    }
    const isObject = [...query.keys()].every((k) => k === 'x-id');
    if (isObject) {
      if (algorithm && typeof sent === 'string') this.algorithms.set(pathname, algorithm);
      else this.algorithms.delete(pathname);
    }
    return null;
  }

  /**
   * An upload's answer as S3 gives it: a PutObject's with the checksum of the bytes stored, a
   * CompleteMultipartUpload's with the full-object checksum of the object the store now holds
   * (`stored` reads it).
   */
  async answerUpload(
    req: http.IncomingMessage,
    pathname: string,
    query: URLSearchParams,
    up: { status: number; headers: http.OutgoingHttpHeaders; body: Buffer },
    stored: { body: Buffer; object: () => Promise<Buffer> },
  ): Promise<{ headers: http.OutgoingHttpHeaders; body: Buffer }> {
    const same = { headers: up.headers, body: up.body };
    const algorithm = this.algorithms.get(pathname);
    if (up.status !== 200 || !algorithm) return same;
    if (req.method === 'PUT' && [...query.keys()].every((k) => k === 'x-id')) {
      return {
        headers: {
          ...up.headers,
          [`x-amz-checksum-${algorithm}`]: await checksumOf(algorithm, stored.body),
          'x-amz-checksum-type': 'FULL_OBJECT',
        },
        body: up.body,
      };
    }
    if (req.method === 'POST' && query.has('uploadId')) {
      const tag = `Checksum${algorithm === 'crc64nvme' ? 'CRC64NVME' : algorithm.toUpperCase()}`;
      const value = await checksumOf(algorithm, await stored.object());
      const xml = up.body
        .toString('utf8')
        .replace(
          '</CompleteMultipartUploadResult>',
          `<${tag}>${value}</${tag}><ChecksumType>FULL_OBJECT</ChecksumType></CompleteMultipartUploadResult>`,
        );
      const body = Buffer.from(xml);
      return { headers: { ...up.headers, 'content-length': body.length }, body };
    }
    return same;
  }

  /** Headers to add to a GET's answer: the object's full-object checksum, when asked for and whole. */
  async answerHeaders(
    req: http.IncomingMessage,
    pathname: string,
    status: number,
    body: Buffer,
  ): Promise<Record<string, string>> {
    const mode = req.headers['x-amz-checksum-mode'];
    if (
      status !== 200 ||
      typeof mode !== 'string' ||
      mode.toUpperCase() !== 'ENABLED' ||
      req.headers['range'] !== undefined
    )
      return {};
    const algorithm = this.algorithms.has(pathname) ? this.algorithms.get(pathname) : 'crc64nvme';
    if (!algorithm) return {};
    return {
      [`x-amz-checksum-${algorithm}`]: await checksumOf(algorithm, body),
      'x-amz-checksum-type': 'FULL_OBJECT',
    };
  }
}
