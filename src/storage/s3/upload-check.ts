/**
 * Upload verification: what the store says it stored, compared with what was sent.
 *
 * Every PutObject and every part of a multipart upload carries a checksum computed here (the
 * store verifies it before it stores the bytes). The whole object's checksum is then known
 * locally without a second pass over the file: a single PUT's own, or for a multipart upload the
 * parts' CRCs combined into the full-object CRC (CRC64NVME, CRC32, CRC32C, uploaded with
 * ChecksumType FULL_OBJECT; ./crc-combine.ts), the composite `<checksum of the parts'
 * checksums>-N` (SHA1, SHA256), or for `MD5` the multipart ETag `<MD5 of the parts' MD5s>-N`.
 * It is compared with the store's answer: the checksum PutObject or CompleteMultipartUpload
 * returns (AWS), else a HEAD's with `x-amz-checksum-mode: ENABLED` (moto answers it there only),
 * else a single-part object's ETag as its MD5. A store that answers none of them (s3rver) leaves
 * the upload 'not available': counted so, never as verified.
 */
import { createHash } from 'node:crypto';
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { Sha1, Sha256 } from '@aws-sdk/checksums/sha';
import { StorageError } from '../../errors.js';
import type { UploadChecksum } from './checksums.js';
import { combineCrcs } from './crc-combine.js';
import type { CombinableCrc } from './crc-combine.js';

type Algorithm = Exclude<UploadChecksum, 'MD5' | 'off'>;
const HASHERS = {
  CRC64NVME: Crc64Nvme,
  CRC32: Crc32,
  CRC32C: Crc32c,
  SHA1: Sha1,
  SHA256: Sha256,
} as const;
/** Where a PutObject/UploadPart input and a PutObject/Complete/HEAD output hold each algorithm's value. */
const FIELDS = {
  CRC64NVME: 'ChecksumCRC64NVME',
  CRC32: 'ChecksumCRC32',
  CRC32C: 'ChecksumCRC32C',
  SHA1: 'ChecksumSHA1',
  SHA256: 'ChecksumSHA256',
} as const satisfies Record<Algorithm, string>;
type Field = (typeof FIELDS)[Algorithm];

function isCrc(checksum: UploadChecksum): checksum is CombinableCrc {
  return checksum === 'CRC64NVME' || checksum === 'CRC32' || checksum === 'CRC32C';
}

/** How an upload's answer was checked: an algorithm, a composite of one, the ETag, or not at all. */
export type UploadCheckKind =
  Algorithm | 'SHA1 composite' | 'SHA256 composite' | 'ETag MD5' | 'not available' | 'none';

/** The parts of a store's answer that say what it stored. */
export type StoredAnswer = Partial<Record<Field, string>> & {
  ETag?: string;
  ServerSideEncryption?: string;
  SSECustomerAlgorithm?: string;
};

/** A checksum header to send: `{ ChecksumCRC64NVME: '…' }` or `{ ContentMD5: '…' }` (none when off). */
export type ChecksumHeader = Partial<Record<Field | 'ContentMD5', string>> & {
  ChecksumAlgorithm?: Algorithm;
};

/** The checksum of `bytes` for the header of its PUT or part, with the digest kept for the whole. */
async function digestOf(
  checksum: Exclude<UploadChecksum, 'off'>,
  bytes: Uint8Array,
): Promise<Uint8Array> {
  if (checksum === 'MD5') return createHash('md5').update(bytes).digest();
  const hash = new HASHERS[checksum]();
  hash.update(bytes);
  return hash.digest();
}

function headerOf(checksum: Exclude<UploadChecksum, 'off'>, digest: Uint8Array): ChecksumHeader {
  const value = Buffer.from(digest).toString('base64');
  return checksum === 'MD5'
    ? { ContentMD5: value }
    : { ChecksumAlgorithm: checksum, [FIELDS[checksum]]: value };
}

/** What the store must answer for the whole object. */
export interface ExpectedUpload {
  /** The checksum the answer must carry (base64, `…-N` for a composite one), when one was sent. */
  checksum?: {
    kind: Algorithm | 'SHA1 composite' | 'SHA256 composite';
    field: Field;
    value: string;
  };
  /** The object's MD5 as an ETag would show it (hex, `…-N` for a multipart upload), computed on demand. */
  etag?: () => Promise<string>;
}

/** A single-part upload of `bytes`: its header, and what the store must answer. */
export async function singlePart(
  checksum: UploadChecksum,
  bytes: Uint8Array,
): Promise<{ header: ChecksumHeader; expected: ExpectedUpload }> {
  if (checksum === 'off') return { header: {}, expected: {} };
  const digest = await digestOf(checksum, bytes);
  const md5 = async () =>
    (checksum === 'MD5' ? Buffer.from(digest) : createHash('md5').update(bytes).digest()).toString(
      'hex',
    );
  if (checksum === 'MD5') return { header: headerOf(checksum, digest), expected: { etag: md5 } };
  const value = Buffer.from(digest).toString('base64');
  return {
    header: headerOf(checksum, digest),
    expected: { checksum: { kind: checksum, field: FIELDS[checksum], value }, etag: md5 },
  };
}

/**
 * The parts of one multipart upload attempt: each part's header as it is sent, and the whole
 * object's expected checksum once all are.
 */
export class MultipartSums {
  private readonly parts = new Map<number, { digest: Uint8Array; length: number }>();
  constructor(readonly checksum: UploadChecksum) {}

  /** CreateMultipartUpload: a CRC makes a full-object checksum; SHA1/SHA256 can only be composite. */
  createParams(): { ChecksumAlgorithm?: Algorithm; ChecksumType?: 'FULL_OBJECT' } {
    if (this.checksum === 'off' || this.checksum === 'MD5') return {};
    return isCrc(this.checksum)
      ? { ChecksumAlgorithm: this.checksum, ChecksumType: 'FULL_OBJECT' }
      : { ChecksumAlgorithm: this.checksum };
  }

  /** The header of part `partNumber` (its digest kept; a retried part's replaces it). */
  async part(partNumber: number, bytes: Uint8Array): Promise<ChecksumHeader> {
    if (this.checksum === 'off') return {};
    const digest = await digestOf(this.checksum, bytes);
    this.parts.set(partNumber, { digest, length: bytes.length });
    return headerOf(this.checksum, digest);
  }

  /** CompleteMultipartUpload: the full-object CRC, for the store to check as well (AWS does). */
  completeParams(): Partial<Record<Field, string>> & { ChecksumType?: 'FULL_OBJECT' } {
    const expected = this.expected().checksum;
    return expected && isCrc(this.checksum)
      ? { [expected.field]: expected.value, ChecksumType: 'FULL_OBJECT' }
      : {};
  }

  /** What the store must answer for the whole object, once every part was sent. */
  expected(): ExpectedUpload {
    const { checksum } = this;
    if (checksum === 'off') return {};
    const ordered = [...this.parts].sort(([a], [b]) => a - b).map(([, p]) => p);
    const n = ordered.length;
    if (checksum === 'MD5') {
      const md5s = createHash('md5');
      for (const p of ordered) md5s.update(p.digest);
      const etag = `${md5s.digest('hex')}-${n}`;
      return { etag: async () => etag };
    }
    if (isCrc(checksum)) {
      const whole = combineCrcs(checksum, ordered);
      return whole
        ? {
            checksum: {
              kind: checksum,
              field: FIELDS[checksum],
              value: Buffer.from(whole).toString('base64'),
            },
          }
        : {};
    }
    const hash = createHash(checksum === 'SHA1' ? 'sha1' : 'sha256');
    for (const p of ordered) hash.update(p.digest);
    const value = `${hash.digest('base64')}-${n}`;
    return { checksum: { kind: `${checksum} composite`, field: FIELDS[checksum], value } };
  }
}

/** The outcome of comparing an answer: verified (by what), nothing to compare, or a mismatch. */
export type Verdict =
  | { verified: Exclude<UploadCheckKind, 'not available' | 'none'> }
  | { verified: 'not available' }
  | { mismatch: { kind: string; sent: string; stored: string } };

const MD5_ETAG = /^"?([0-9a-fA-F]{32}(?:-[1-9][0-9]*)?)"?$/;

/**
 * Compare the store's answer with what was sent: its checksum where it gives the one asked for,
 * else its ETag as the object's MD5 (unless `etagIsMd5` is false or the object is encrypted with
 * SSE-KMS or SSE-C, whose ETags are not), else nothing to compare.
 */
export async function compareAnswer(
  expected: ExpectedUpload,
  answer: StoredAnswer,
  etagIsMd5: boolean,
): Promise<Verdict> {
  const { checksum } = expected;
  const stored = checksum ? answer[checksum.field] : undefined;
  if (checksum && typeof stored === 'string' && stored !== '') {
    // moto's HEAD answers a composite checksum without its `-N`: then the checksums alone count.
    const sent =
      checksum.kind.endsWith(' composite') && !stored.includes('-')
        ? checksum.value.replace(/-[0-9]+$/, '')
        : checksum.value;
    return stored === sent
      ? { verified: checksum.kind }
      : { mismatch: { kind: checksum.kind, sent: checksum.value, stored } };
  }
  const encrypted =
    (answer.ServerSideEncryption ?? '').startsWith('aws:kms') ||
    answer.SSECustomerAlgorithm !== undefined;
  const etag = MD5_ETAG.exec(answer.ETag ?? '')?.[1]?.toLowerCase();
  if (expected.etag && etagIsMd5 && !encrypted && etag) {
    const sent = await expected.etag();
    // A multipart ETag (`…-N`) is compared only with one: s3rver's are a plain MD5 of something else.
    if (sent.includes('-') === etag.includes('-')) {
      return etag === sent
        ? { verified: 'ETag MD5' }
        : { mismatch: { kind: 'ETag MD5', sent, stored: etag } };
    }
  }
  return { verified: 'not available' };
}

/**
 * The store holds an object other than the bytes sent: its answer's checksum (or ETag) differs
 * from theirs. Terminal: nothing a retry could make right is known (the parts' own checksums
 * were accepted); `removed` says whether the object was deleted again, so nothing refers to it.
 */
export class UploadChecksumError extends StorageError {
  constructor(args: {
    op: string;
    key: string;
    uri: string;
    kind: string;
    sent: string;
    stored: string;
    removed: 'deleted' | 'kept' | { failed: string };
  }) {
    const { op, key, uri, kind, sent, stored, removed } = args;
    const etagHint =
      kind === 'ETag MD5'
        ? ' (its ETag is taken for its MD5; for a store whose ETags are not, set storage.etagChecksum: false)'
        : '';
    const after =
      removed === 'deleted'
        ? 'the object was deleted, so nothing refers to it'
        : removed === 'kept'
          ? 'the object is left as it is (a reader may already have seen it)'
          : `deleting it failed too (${removed.failed}); no commit refers to it, and vacuum removes it`;
    super(
      `[storage] S3 ${op} of ${JSON.stringify(key)} to ${uri}: the store answered the ${kind} checksum ${stored} for what it stored, ` +
        `where the bytes sent have ${sent}${etagHint}; ${after}`,
      {
        kind: 'terminal',
        context: {
          key,
          uri,
          op,
          checksum: kind,
          sent,
          stored,
          removed: typeof removed === 'string' ? removed : 'failed',
          fault: 'upload checksum mismatch',
        },
      },
    );
  }
}

/** How an upload's answer is settled: a HEAD for a multipart upload whose answer lacks its checksum, and what a mismatch does to the object. */
export interface Settle {
  op: string;
  key: string;
  uri: string;
  etagIsMd5: boolean;
  /** The object's answer to a HEAD with `x-amz-checksum-mode: ENABLED` (multipart uploads only). */
  head?: () => Promise<StoredAnswer>;
  /** Delete the object after a mismatch; absent: it is kept (a commit, which a reader may have seen). */
  remove?: () => Promise<void>;
}

/**
 * What the upload is counted as (`none` with checksums off), or an UploadChecksumError when the
 * store holds other bytes than were sent (the object deleted first, where `remove` is given).
 */
export async function settleUpload(
  expected: ExpectedUpload,
  answer: StoredAnswer,
  how: Settle,
): Promise<UploadCheckKind> {
  if (!expected.checksum && !expected.etag) return 'none';
  let verdict = await compareAnswer(expected, answer, how.etagIsMd5);
  if (
    'verified' in verdict &&
    verdict.verified === 'not available' &&
    expected.checksum &&
    how.head
  ) {
    verdict = await compareAnswer(expected, await how.head(), how.etagIsMd5);
  }
  if ('verified' in verdict) return verdict.verified;
  let removed: 'deleted' | 'kept' | { failed: string } = 'kept';
  if (how.remove) {
    removed = await how.remove().then(
      () => 'deleted' as const,
      (err: unknown) => ({ failed: err instanceof Error ? err.message : String(err) }),
    );
  }
  throw new UploadChecksumError({
    op: how.op,
    key: how.key,
    uri: how.uri,
    ...verdict.mismatch,
    removed,
  });
}
