/**
 * The one storage interface. Discovery, the Delta log and data files all go through it,
 * so a local folder and an S3 prefix behave the same. A Storage is rooted: keys are
 * relative to its root, use `/` as separator and never start with `/`.
 */
import type { Readable } from 'node:stream';

export interface ObjectInfo {
  /** Key relative to the storage root. */
  key: string;
  size: number;
  lastModified: Date;
  /** Content identity: S3 ETag (quotes stripped), or a size+mtime digest on local disk. */
  etag: string;
}

export interface ListOptions {
  /** Only keys starting with this prefix (relative to the root). */
  prefix?: string;
  /** Group keys by the next occurrence of the delimiter after the prefix (usually `/`). */
  delimiter?: string;
  /** Only keys strictly greater than this key (lexicographic, like S3 StartAfter). */
  startAfter?: string;
  /** Page size hint (S3 MaxKeys, at most 1000); objects and common prefixes both count. */
  pageSize?: number;
  /**
   * A driver that knows some objects by their content (a job's local source knows small files by a
   * digest of their bytes, read per file) may list them by a cheaper ETag instead (their stats);
   * `Storage.identify` then gives the ETag a plain listing would. Only for callers that identify
   * every object whose ETag they compare or keep (discovery: the candidates it keeps).
   */
  deferContentEtags?: boolean;
  signal?: AbortSignal;
}

export interface ListPage {
  objects: ObjectInfo[];
  /** With a delimiter: the "folders" (each ends with the delimiter), relative to the root. */
  commonPrefixes: string[];
  /** The store's clock when it answered (HTTP Date on S3, local clock on disk). */
  serverTime: Date;
}

export interface ListResult extends ListPage {}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive; omitted = to the end. */
  end?: number;
}

export type Body = Uint8Array | string;

/**
 * Requests sent to the store, by kind, so a run report can show what a run costs (S3 bills
 * PUT/LIST apart from GET/HEAD). Every HTTP request counts once, retries included; a listing
 * page is one `list`; multipart create/part/complete count as `put`, an abort as `delete`.
 */
export interface RequestCounts {
  list: number;
  get: number;
  put: number;
  head: number;
  delete: number;
}

/**
 * How the bytes of whole-object reads and of uploads were checked, by kind: a checksum algorithm
 * (`CRC64NVME`, `CRC32`, …, `SHA256 composite`), `ETag MD5`, `none` where a read had nothing to be
 * checked against or an upload was sent with checks off, and `not available` for an upload whose
 * answer said nothing to compare (never counted as verified).
 */
export interface ChecksumCounts {
  reads: Record<string, number>;
  uploads: Record<string, number>;
}

/**
 * What a store's root is, on stores with folders of their own (local disk): a folder, a file, or
 * nothing (also when a parent is a file).
 */
export type RootKind = 'folder' | 'file' | 'missing';

export interface WriteOptions {
  contentType?: string;
  signal?: AbortSignal;
}

export interface Storage {
  /** Root URI, for messages and for building child storages (`file:///x/`, `s3://b/p/`). */
  readonly uri: string;
  /**
   * Pages in key order: UTF-8 byte order, as S3 lists (see `compareKeys` in ./driver-helpers.ts).
   * Always at least one page, possibly empty.
   */
  list(opts?: ListOptions): AsyncIterable<ListPage>;
  /** All pages gathered into one result; serverTime is that of the first page. */
  listAll(opts?: ListOptions): Promise<ListResult>;
  /** Metadata, or null when the key does not exist. */
  head(key: string): Promise<ObjectInfo | null>;
  /** Whole object (or a range) in memory, or null when the key does not exist. */
  read(key: string, range?: ByteRange): Promise<Uint8Array | null>;
  /** A stream of the object (or a range); throws StorageError with `notFound` when missing. */
  readStream(key: string, range?: ByteRange): Promise<Readable>;
  /** Copy the object to a local file (created with its folders); returns the object's info. */
  download(key: string, localPath: string, opts?: { signal?: AbortSignal }): Promise<ObjectInfo>;
  /** Path readable in place on local disk, or null when the object must be downloaded first. */
  localPath(key: string): string | null;
  /** Create or replace an object in one visible step (no reader sees a partial object). */
  write(key: string, body: Body, opts?: WriteOptions): Promise<void>;
  /** Upload a local file, multipart when large; visible in one step. */
  upload(key: string, localPath: string, opts?: WriteOptions): Promise<void>;
  /**
   * Atomic put-if-absent: returns true if this call created the key, false if it already existed.
   * Never overwrites. On a store that ignores conditional writes the result cannot be trusted:
   * see `probeConditionalWrite` in ./probe.ts.
   *
   * When an attempt's answer was lost (HTTP 500 or a reset after the store acted) and a retry
   * finds the key taken, the driver reads it back: true when it holds exactly this body. A
   * transient error means the outcome is unknown (the write may have landed); callers that must
   * know read the key (the Delta commit recognises its own commit by commitInfo.txnId).
   */
  writeIfAbsent(key: string, body: Body, opts?: WriteOptions): Promise<boolean>;
  /** Delete keys (batched); missing keys are not an error. */
  delete(keys: string[]): Promise<void>;
  /**
   * `objects` (listed with `deferContentEtags`) with the ETags a plain listing would give them now,
   * in the same order; absent on drivers whose listing has nothing to defer (S3). An object gone
   * since its listing is returned as listed.
   */
  identify?(objects: readonly ObjectInfo[], opts?: { signal?: AbortSignal }): Promise<ObjectInfo[]>;
  /** A storage rooted at `prefix` below this one (prefix is relative and ends without `/`). */
  child(prefix: string): Storage;
  /** Requests sent so far by this storage and its parent and children (one shared count); absent on drivers without request costs. */
  requestCounts?(): RequestCounts;
  /** Reads and uploads checked so far by this storage's tree, by kind; absent on drivers without checksums (local disk). */
  checksumCounts?(): ChecksumCounts;
  /**
   * What the root is, on stores with folders (local disk), so a missing landing folder is not read
   * as an empty one. Absent on stores without folders (S3): a prefix exists there once an object
   * lies below it, so an empty listing cannot tell "empty" from "missing".
   */
  inspectRoot?(): Promise<RootKind>;
}

/** `objects` with the ETags a plain listing gives (`Storage.identify`); unchanged on drivers with nothing to defer. */
export async function identifyObjects(
  storage: Storage,
  objects: readonly ObjectInfo[],
  opts: { signal?: AbortSignal } = {},
): Promise<ObjectInfo[]> {
  if (objects.length === 0 || !storage.identify) return [...objects];
  return storage.identify(objects, opts);
}
