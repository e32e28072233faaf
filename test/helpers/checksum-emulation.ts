/**
 * S3's checksums, for the fault proxy in front of s3rver (which checks none): an upload whose
 * body does not match the checksum it carries (`x-amz-checksum-<algorithm>` or Content-MD5) is
 * refused with 400 BadDigest before the store sees it, and a whole-object GET asked with
 * `x-amz-checksum-mode: ENABLED` is answered with a full-object checksum of the object: the
 * algorithm its PutObject (or CreateMultipartUpload) named, else CRC64NVME, which AWS keeps for
 * every object written since 2025.
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { Sha1, Sha256 } from '@aws-sdk/checksums/sha';

const HASHERS = { crc64nvme: Crc64Nvme, crc32: Crc32, crc32c: Crc32c, sha1: Sha1, sha256: Sha256 } as const;
type Algorithm = keyof typeof HASHERS;

async function checksumOf(algorithm: Algorithm, body: Uint8Array): Promise<string> {
  const hash = new HASHERS[algorithm]();
  hash.update(body);
  return Buffer.from(await hash.digest()).toString('base64');
}

/** The algorithm named by an `x-amz-checksum-<algorithm>` header (or x-amz-checksum-algorithm). */
function namedAlgorithm(headers: http.IncomingHttpHeaders): Algorithm | undefined {
  const named = headers['x-amz-checksum-algorithm'] ?? headers['x-amz-sdk-checksum-algorithm'];
  if (typeof named === 'string' && named.toLowerCase() in HASHERS) return named.toLowerCase() as Algorithm;
  return (Object.keys(HASHERS) as Algorithm[]).find((a) => typeof headers[`x-amz-checksum-${a}`] === 'string');
}

export class ChecksumEmulation {
  /** Object path → the algorithm its upload named (null: a composite multipart checksum, not answered). */
  private readonly algorithms = new Map<string, Algorithm | null>();

  /**
   * For a PUT (an object or a part) or a CreateMultipartUpload: null when its body matches what it
   * carries (remembering the object's algorithm), else the BadDigest error to answer.
   */
  async checkUpload(req: http.IncomingMessage, pathname: string, query: URLSearchParams, body: Buffer): Promise<{ code: string; message: string } | null> {
    const algorithm = namedAlgorithm(req.headers);
    if (req.method === 'POST' && query.has('uploads')) {
      // CRC64NVME makes a full-object checksum of a multipart upload; the others a composite one.
      if (algorithm) this.algorithms.set(pathname, algorithm === 'crc64nvme' ? algorithm : null);
      else this.algorithms.delete(pathname);
      return null;
    }
    if (req.method !== 'PUT') return null;
    const md5 = req.headers['content-md5'];
    if (typeof md5 === 'string' && createHash('md5').update(body).digest('base64') !== md5) {
      return { code: 'BadDigest', message: 'The Content-MD5 you specified did not match what we received.' };
    }
    const sent = algorithm ? req.headers[`x-amz-checksum-${algorithm}`] : undefined;
    if (algorithm && typeof sent === 'string' && (await checksumOf(algorithm, body)) !== sent) {
      return { code: 'BadDigest', message: `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.` };
    }
    const isObject = [...query.keys()].every((k) => k === 'x-id');
    if (isObject) {
      if (algorithm && typeof sent === 'string') this.algorithms.set(pathname, algorithm);
      else this.algorithms.delete(pathname);
    }
    return null;
  }

  /** Headers to add to a GET's answer: the object's full-object checksum, when asked for and whole. */
  async answerHeaders(req: http.IncomingMessage, pathname: string, status: number, body: Buffer): Promise<Record<string, string>> {
    const mode = req.headers['x-amz-checksum-mode'];
    if (status !== 200 || typeof mode !== 'string' || mode.toUpperCase() !== 'ENABLED' || req.headers['range'] !== undefined) return {};
    const algorithm = this.algorithms.has(pathname) ? this.algorithms.get(pathname) : 'crc64nvme';
    if (!algorithm) return {};
    return { [`x-amz-checksum-${algorithm}`]: await checksumOf(algorithm, body), 'x-amz-checksum-type': 'FULL_OBJECT' };
  }
}
