/**
 * What both storage drivers share: S3 key order, page gathering, range and body checks, not-found errors.
 */
import { StorageError } from '../errors.js';
import type { Body, ByteRange, ListOptions, ListPage, ListResult } from './storage.js';

/**
 * Compare two keys the way S3 orders them: by their UTF-8 bytes.
 * (JavaScript's default string order compares UTF-16 code units, which differs for
 * characters above U+FFFF versus U+E000..U+FFFF; both drivers must agree with S3.)
 */
export function compareKeys(a: string, b: string): number {
  // Up to the first differing code unit both keys encode alike; below U+D800 (no surrogate), code
  // unit order is UTF-8 byte order. Listings sort every folder by this: no Buffers in the common case.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 && y < 0xd800) return x < y ? -1 : 1;
    return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Gather every page of a listing into one result; serverTime is that of the first page. */
export async function gatherPages(pages: AsyncIterable<ListPage>): Promise<ListResult> {
  const result: ListResult = { objects: [], commonPrefixes: [], serverTime: new Date() };
  let first = true;
  for await (const page of pages) {
    if (first) result.serverTime = page.serverTime;
    first = false;
    result.objects.push(...page.objects);
    result.commonPrefixes.push(...page.commonPrefixes);
  }
  return result;
}

/** Default and maximum page size, as on S3. */
export const MAX_PAGE_SIZE = 1000;

/** Validated page size from list options (S3 accepts 1..1000; larger hints are capped). */
export function pageSizeOf(opts: ListOptions): number {
  const size = opts.pageSize ?? MAX_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 1) {
    throw new StorageError(`[storage] pageSize must be a positive integer, got ${size}`, {
      kind: 'usage',
    });
  }
  return Math.min(size, MAX_PAGE_SIZE);
}

/** Throw a usage error for a malformed range (negative, fractional, end before start). */
export function checkRange(range: ByteRange | undefined, key: string): void {
  if (!range) return;
  const okStart = Number.isSafeInteger(range.start) && range.start >= 0;
  const okEnd =
    range.end === undefined || (Number.isSafeInteger(range.end) && range.end >= range.start);
  if (!okStart || !okEnd) {
    throw new StorageError(
      `[storage] invalid byte range ${JSON.stringify(range)} for ${JSON.stringify(key)}`,
      {
        kind: 'usage',
        context: { key },
      },
    );
  }
}

/** Bytes of a body: strings are written as UTF-8. */
export function bodyBytes(body: Body): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

/** Error for a key that does not exist, where the API promises an error rather than null. */
export function notFoundError(key: string, uri: string, cause?: unknown): StorageError {
  return new StorageError(`[storage] no such key ${JSON.stringify(key)} in ${uri}`, {
    kind: 'terminal',
    context: { key, uri, notFound: true },
    cause,
  });
}
