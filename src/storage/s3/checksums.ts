/**
 * Checksums of S3 objects, end to end, with the AWS SDK's own checksum algorithms.
 *
 * Reads: GetObject asks for the object's checksum (`x-amz-checksum-mode: ENABLED`); the first
 * answer's full-object checksum (CRC64NVME, CRC32, CRC32C, SHA…, whichever the store keeps) is
 * the one every byte handed out is hashed against, resumed ranges included (the SDK's own check
 * covers one answer only, and a range answer carries no full-object checksum). Without one, a
 * single-part object's ETag is its MD5 on s3rver, MinIO and AWS (unless encrypted with SSE-KMS or
 * SSE-C); a multipart ETag (`…-N`) is not. A read of part of an object has nothing to be checked
 * against.
 *
 * Uploads: PutObject and each part of a multipart upload carry a checksum the store verifies
 * before it stores the bytes (CRC64NVME by default, a full-object checksum also for multipart
 * uploads on AWS), or a Content-MD5; `off` for stores that refuse the header.
 */
import { createHash } from 'node:crypto';
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { Md5 } from '@aws-sdk/checksums/md5';
import { Sha1, Sha256, Sha512 } from '@aws-sdk/checksums/sha';
import { Xxh3_128, Xxh3_64, Xxh64 } from '@aws-sdk/checksums/xxh';
import type { GetObjectCommandOutput } from '@aws-sdk/client-s3';
import type { ChecksumCounts } from '../storage.js';

/** The SDK's checksum classes, as used here. */
interface Checksum {
  update(data: Uint8Array): void;
  digest(): Promise<Uint8Array>;
}

/** What an upload sends for the store to verify; `off` sends nothing. */
export const UPLOAD_CHECKSUMS = ['CRC64NVME', 'CRC32', 'CRC32C', 'SHA1', 'SHA256', 'MD5', 'off'] as const;
export type UploadChecksum = (typeof UPLOAD_CHECKSUMS)[number];
export const DEFAULT_UPLOAD_CHECKSUM: UploadChecksum = 'CRC64NVME';

/** Full-object checksums a GetObject answer can carry, in the order they are preferred. */
const READ_ALGORITHMS = {
  CRC64NVME: { field: 'ChecksumCRC64NVME', hasher: Crc64Nvme },
  CRC32C: { field: 'ChecksumCRC32C', hasher: Crc32c },
  CRC32: { field: 'ChecksumCRC32', hasher: Crc32 },
  SHA256: { field: 'ChecksumSHA256', hasher: Sha256 },
  SHA512: { field: 'ChecksumSHA512', hasher: Sha512 },
  SHA1: { field: 'ChecksumSHA1', hasher: Sha1 },
  MD5: { field: 'ChecksumMD5', hasher: Md5 },
  XXHASH64: { field: 'ChecksumXXHASH64', hasher: Xxh64 },
  XXHASH3: { field: 'ChecksumXXHASH3', hasher: Xxh3_64 },
  XXHASH128: { field: 'ChecksumXXHASH128', hasher: Xxh3_128 },
} as const satisfies Record<string, { field: keyof GetObjectCommandOutput; hasher: new () => Checksum }>;
type ReadAlgorithm = keyof typeof READ_ALGORITHMS;

/** How a whole-object read or an upload was checked: an algorithm, `ETag MD5`, or `none`. */
export type CheckKind = ReadAlgorithm | 'ETag MD5' | 'Content-MD5' | 'none';

/** A shared, mutable tally of checked reads and uploads (the run report shows it); `snapshot` hands out copies. */
export class ChecksumCounter {
  private readonly counts: ChecksumCounts = { reads: {}, uploads: {} };
  /** A whole-object read, by what its bytes were checked against. */
  read(kind: CheckKind): void {
    this.counts.reads[kind] = (this.counts.reads[kind] ?? 0) + 1;
  }
  /** An upload (PutObject, multipart upload), by the checksum the store verified. */
  upload(kind: CheckKind): void {
    this.counts.uploads[kind] = (this.counts.uploads[kind] ?? 0) + 1;
  }
  snapshot(): ChecksumCounts {
    return { reads: { ...this.counts.reads }, uploads: { ...this.counts.uploads } };
  }
}

/** The checksum a whole-object read's bytes must match. */
export interface ExpectedChecksum {
  kind: Exclude<CheckKind, 'none' | 'Content-MD5'>;
  /** As the store gave it: base64 for a checksum header, hex for an ETag. */
  value: string;
}

const MD5_ETAG = /^"?([0-9a-fA-F]{32})"?$/;

/**
 * What the bytes of the first answer of a whole-object read are checked against: its full-object
 * checksum (not a composite one of a multipart upload, `…-N`), else the ETag where it is the
 * object's MD5 (`etagIsMd5` false for stores whose ETags are not). Undefined: nothing to check.
 */
export function expectedChecksum(out: GetObjectCommandOutput, etagIsMd5: boolean): ExpectedChecksum | undefined {
  if (out.ChecksumType !== 'COMPOSITE') {
    for (const [kind, { field }] of Object.entries(READ_ALGORITHMS) as [ReadAlgorithm, (typeof READ_ALGORITHMS)[ReadAlgorithm]][]) {
      const value = out[field];
      if (typeof value === 'string' && value !== '' && !value.includes('-')) return { kind, value };
    }
  }
  // SSE-KMS and SSE-C objects have ETags that are not the MD5 of their bytes.
  const encrypted = (out.ServerSideEncryption ?? '').startsWith('aws:kms') || out.SSECustomerAlgorithm !== undefined;
  const md5 = MD5_ETAG.exec(out.ETag ?? '')?.[1];
  if (etagIsMd5 && !encrypted && md5) return { kind: 'ETag MD5', value: md5.toLowerCase() };
  return undefined;
}

/** Hashes the bytes of a read as they are handed out, and says whether they match at the end. */
export class ReadHash {
  private readonly hash: Checksum;
  constructor(readonly expected: ExpectedChecksum) {
    this.hash = expected.kind === 'ETag MD5' ? new Md5() : new READ_ALGORITHMS[expected.kind].hasher();
  }
  update(bytes: Uint8Array): void {
    this.hash.update(bytes);
  }
  /** The bytes' checksum, encoded as the expected value is. */
  async actual(): Promise<string> {
    const digest = Buffer.from(await this.hash.digest());
    return digest.toString(this.expected.kind === 'ETag MD5' ? 'hex' : 'base64');
  }
}

/**
 * PutObject / UploadPart parameters that make the store verify `body` (ContentMD5 for `MD5`; the
 * SDK computes the others from ChecksumAlgorithm).
 */
export function uploadChecksumParams(
  checksum: UploadChecksum,
  body: Uint8Array,
): { ChecksumAlgorithm?: Exclude<UploadChecksum, 'MD5' | 'off'>; ContentMD5?: string } {
  if (checksum === 'off') return {};
  if (checksum === 'MD5') return { ContentMD5: createHash('md5').update(body).digest('base64') };
  return { ChecksumAlgorithm: checksum };
}

/** How an upload with this setting is counted. */
export function uploadKind(checksum: UploadChecksum): CheckKind {
  if (checksum === 'off') return 'none';
  return checksum === 'MD5' ? 'Content-MD5' : checksum;
}
