/**
 * Checksums of S3 objects, end to end, with the AWS SDK's own checksum algorithms.
 *
 * Reads: GetObject asks for the object's checksum (`x-amz-checksum-mode: ENABLED`); the first
 * answer's full-object checksum (CRC64NVME, CRC32, CRC32C, SHA…, whichever the store keeps) is
 * the one every byte handed out is hashed against, resumed ranges included (the SDK's own check
 * covers one answer only, and a range answer carries no full-object checksum). A multipart
 * upload's composite checksum (`<checksum of the parts' checksums>-N`, CRC32, CRC32C, SHA1 or
 * SHA256) is checked the same way once the parts' sizes are known (a HEAD of each part): each
 * part's bytes are hashed on their own, then their checksums. Without a checksum, a single-part
 * object's ETag is its MD5 on s3rver, MinIO and AWS (unless encrypted with SSE-KMS or SSE-C); a
 * multipart ETag (`…-N`) is not. A read of part of an object has nothing to be checked against.
 *
 * Uploads: PutObject and each part of a multipart upload carry a checksum the store verifies
 * before it stores the bytes (CRC64NVME by default), or a Content-MD5; `off` for stores that
 * refuse the header. What the store then says it stored is compared with what was sent in
 * ./upload-check.ts.
 */
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { Md5 } from '@aws-sdk/checksums/md5';
import { Sha1, Sha256, Sha512 } from '@aws-sdk/checksums/sha';
import { Xxh3_128, Xxh3_64, Xxh64 } from '@aws-sdk/checksums/xxh';
import type { GetObjectCommandOutput } from '@aws-sdk/client-s3';
import { StorageError } from '../../errors.js';
import type { ChecksumCounts } from '../storage.js';

/** The SDK's checksum classes, as used here. */
interface Checksum {
  update(data: Uint8Array): void;
  digest(): Promise<Uint8Array>;
}

/** What an upload sends for the store to verify; `off` sends nothing. */
export const UPLOAD_CHECKSUMS = [
  'CRC64NVME',
  'CRC32',
  'CRC32C',
  'SHA1',
  'SHA256',
  'MD5',
  'off',
] as const;
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
} as const satisfies Record<
  string,
  { field: keyof GetObjectCommandOutput; hasher: new () => Checksum }
>;
type ReadAlgorithm = keyof typeof READ_ALGORITHMS;

/** Algorithms a multipart upload's checksum can be composite of (S3 offers no composite CRC64NVME). */
const COMPOSITE_ALGORITHMS = ['CRC32C', 'CRC32', 'SHA256', 'SHA1'] as const;
type CompositeAlgorithm = (typeof COMPOSITE_ALGORITHMS)[number];
/** `<base64>-<parts>`: a composite checksum as GetObject answers it. */
const COMPOSITE_VALUE = /^([A-Za-z0-9+/]+={0,2})-([1-9][0-9]*)$/;

/**
 * How a whole-object read was checked: an algorithm, a composite checksum of one
 * (`CRC32 composite`), `ETag MD5`, or `none`.
 */
export type CheckKind = ReadAlgorithm | `${CompositeAlgorithm} composite` | 'ETag MD5' | 'none';

/** A shared, mutable tally of checked reads and uploads (the run report shows it); `snapshot` hands out copies. */
export class ChecksumCounter {
  private readonly counts: ChecksumCounts = { reads: {}, uploads: {} };
  /** A whole-object read, by what its bytes were checked against. */
  read(kind: CheckKind): void {
    this.counts.reads[kind] = (this.counts.reads[kind] ?? 0) + 1;
  }
  /** An upload (PutObject, multipart upload), by what its answer was checked against (./upload-check.ts). */
  upload(kind: string): void {
    this.counts.uploads[kind] = (this.counts.uploads[kind] ?? 0) + 1;
  }
  snapshot(): ChecksumCounts {
    return { reads: { ...this.counts.reads }, uploads: { ...this.counts.uploads } };
  }
}

/** The checksum a whole-object read's bytes must match. */
export interface ExpectedChecksum {
  kind: Exclude<CheckKind, 'none'>;
  /** As the store gave it: base64 for a checksum header (`…-N` for a composite one), hex for an ETag. */
  value: string;
  /** A composite checksum: of the checksums of this many parts. */
  parts?: number;
}

const MD5_ETAG = /^"?([0-9a-fA-F]{32})"?$/;

/**
 * What the bytes of the first answer of a whole-object read are checked against: its full-object
 * checksum (not a composite one of a multipart upload, `…-N`), else the ETag where it is the
 * object's MD5 (`etagIsMd5` false for stores whose ETags are not). Undefined: nothing to check.
 */
export function expectedChecksum(
  out: GetObjectCommandOutput,
  etagIsMd5: boolean,
): ExpectedChecksum | undefined {
  for (const [kind, { field }] of Object.entries(READ_ALGORITHMS) as [
    ReadAlgorithm,
    (typeof READ_ALGORITHMS)[ReadAlgorithm],
  ][]) {
    const value = out[field];
    if (typeof value !== 'string' || value === '') continue;
    const composite = COMPOSITE_VALUE.exec(value);
    if (composite) {
      if ((COMPOSITE_ALGORITHMS as readonly string[]).includes(kind)) {
        return {
          kind: `${kind as CompositeAlgorithm} composite`,
          value,
          parts: Number(composite[2]),
        };
      }
    } else if (out.ChecksumType !== 'COMPOSITE' && !value.includes('-')) {
      return { kind, value };
    }
  }
  // SSE-KMS and SSE-C objects have ETags that are not the MD5 of their bytes.
  const encrypted =
    (out.ServerSideEncryption ?? '').startsWith('aws:kms') ||
    out.SSECustomerAlgorithm !== undefined;
  const md5 = MD5_ETAG.exec(out.ETag ?? '')?.[1];
  if (etagIsMd5 && !encrypted && md5) return { kind: 'ETag MD5', value: md5.toLowerCase() };
  return undefined;
}

/** The hasher of an expected checksum's algorithm. */
function hasherOf(kind: ExpectedChecksum['kind']): new () => Checksum {
  if (kind === 'ETag MD5') return Md5;
  const algorithm = kind.endsWith(' composite')
    ? (kind.slice(0, -' composite'.length) as CompositeAlgorithm)
    : (kind as ReadAlgorithm);
  return READ_ALGORITHMS[algorithm].hasher;
}

/**
 * Hashes the bytes of a read as they are handed out, and says whether they match at the end. A
 * composite checksum needs the parts' sizes (`partSizes`, in order): each part is hashed on its
 * own, and the checksum of their checksums is the object's.
 */
export class ReadHash {
  private readonly Hasher: new () => Checksum;
  private hash: Checksum;
  /** Composite: the parts' sizes, the part being hashed, its bytes still to come, the digests so far. */
  private readonly partSizes: readonly number[];
  private part = 0;
  private partLeft: number;
  private readonly partDigests: Promise<Uint8Array>[] = [];
  private bytes = 0;

  constructor(
    readonly expected: ExpectedChecksum,
    partSizes: readonly number[] = [],
  ) {
    this.Hasher = hasherOf(expected.kind);
    this.hash = new this.Hasher();
    this.partSizes = partSizes;
    this.partLeft = partSizes[0] ?? Number.POSITIVE_INFINITY;
  }

  update(bytes: Uint8Array): void {
    this.bytes += bytes.length;
    let rest = bytes;
    // A part's last byte closes its hash; the next part starts a fresh one.
    while (rest.length >= this.partLeft && this.part < this.partSizes.length) {
      this.hash.update(rest.subarray(0, this.partLeft));
      rest = rest.subarray(this.partLeft);
      this.partDigests.push(this.hash.digest());
      this.hash = new this.Hasher();
      this.part++;
      this.partLeft = this.partSizes[this.part] ?? Number.POSITIVE_INFINITY;
    }
    if (rest.length > 0) {
      this.hash.update(rest);
      this.partLeft -= rest.length;
    }
  }

  /** The bytes' checksum, encoded as the expected value is. */
  async actual(): Promise<string> {
    if (this.expected.parts !== undefined) {
      const held = this.partSizes.reduce((a, b) => a + b, 0);
      if (this.bytes !== held) return `(${this.bytes} bytes, where the parts hold ${held})`;
      const whole = new this.Hasher();
      for (const digest of await Promise.all(this.partDigests)) whole.update(digest);
      return `${Buffer.from(await whole.digest()).toString('base64')}-${this.partDigests.length}`;
    }
    const digest = Buffer.from(await this.hash.digest());
    return digest.toString(this.expected.kind === 'ETag MD5' ? 'hex' : 'base64');
  }
}

/**
 * A store answered a HEAD of one part of a multipart object (`partNumber`) as if for the whole
 * object: its full size and no parts count. The object's composite checksum is checked part by
 * part and needs the parts' sizes, which such a store cannot give; asking again would get the
 * same answer, so the read fails at once, never unchecked.
 */
export class PartNumberIgnoredError extends StorageError {
  constructor(args: {
    key: string;
    uri: string;
    partNumber: number;
    parts: number;
    size: number;
    checksum: string;
  }) {
    const { key, uri, partNumber, parts, size, checksum } = args;
    super(
      `[storage] S3 object ${JSON.stringify(key)} in ${uri} has a ${checksum} checksum of ${parts} parts, checked part by part: ` +
        `the store answered the HEAD of part ${partNumber} (partNumber=${partNumber}) with the whole object's ${size} bytes and no ` +
        'x-amz-mp-parts-count, so it ignores partNumber and cannot say the sizes of the parts; the object cannot be read with its ' +
        'checksum checked on this store (written again in one part, or with a full-object checksum, it can)',
      {
        kind: 'terminal',
        context: { key, uri, partNumber, parts, size, checksum, fault: 'HEAD ignores partNumber' },
      },
    );
  }
}
