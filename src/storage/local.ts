/**
 * Storage on a local folder, behaving like an S3 prefix: same key order, same listing
 * semantics, atomic writes and an atomic put-if-absent. Every file's contents are flushed to disk
 * before it is renamed or linked into place, and a put-if-absent (a commit) also flushes its
 * folder, so the files a commit names hold their bytes on disk before the commit is written, and
 * a commit reported done survives a power cut. (The data files' folders are not flushed apart:
 * file systems that journal metadata in order, as ext4 and XFS do, make their names durable
 * with the commit's.)
 *
 * The file name is the key: `a/b c%.csv` is stored at `<root>/a/b c%.csv`. Keys that are
 * not plain relative paths (`..`, `.`, empty segments, absolute, NUL; a backslash on Windows,
 * where it separates folders; elsewhere it is a character of the name like any other) are
 * refused with UnsafeKeyError, so no key can reach outside the root.
 */
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, fstatSync, openSync, promises as fsp, readSync, statSync } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import pLimit from 'p-limit';
import { StorageError, TidemarkError, UnsafeKeyError } from '../errors.js';
import { makeFolder } from './make-folder.js';
import {
  bodyBytes,
  checkRange,
  compareKeys,
  gatherPages,
  notFoundError,
  pageSizeOf,
} from './driver-helpers.js';
import type {
  Body,
  ByteRange,
  ListOptions,
  ListPage,
  ListResult,
  ObjectInfo,
  RootKind,
  Storage,
  WriteOptions,
} from './storage.js';

/** Temp files of in-flight writes: `.tmp-<uuid>`, hidden from listings. */
const TEMP_NAME = /^\.tmp-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** errno codes that mean "no such object". ENOTDIR: a path component is a file. */
const MISSING = new Set(['ENOENT', 'ENOTDIR']);
/** errno codes worth retrying (resource exhaustion, busy files). */
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR', 'ETIMEDOUT']);
/** errno codes of a refused operation, in words: retrying cannot help, a person must (mount, permissions). */
const REFUSED: Record<string, string> = {
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
};
/** Deletes run this many at a time. */
const DELETE_CONCURRENCY = 32;
/** Files a listing stats at a time. */
const STAT_CONCURRENCY = 32;
/** Files `identify` reads and digests at a time. */
const IDENTIFY_CONCURRENCY = 16;

type Entry = { object: ObjectInfo } | { commonPrefix: string };
/** How to treat a folder during a listing walk: skip it, walk it all, or stop at its first key. */
type Visit = 'skip' | 'all' | 'one';

/** Options of a LocalStorage. */
export interface LocalStorageOptions {
  /**
   * Files of at most this many bytes are known by a digest of their content (`sha256:…` ETags), so
   * a touch, a chmod or a copy of the same bytes leaves them the same file; larger files by their
   * stats. 0 (the default): stats only. A job's source uses CONTENT_DIGEST_MAX_BYTES.
   */
  contentDigestMaxBytes?: number;
}

/**
 * Files up to this size in a job's local source are identified by their content (read and hashed by
 * a plain listing, by `identify` after one with `deferContentEtags`).
 */
export const CONTENT_DIGEST_MAX_BYTES = 1 << 20;

const CONTENT_ETAG_PREFIX = 'sha256:';

/**
 * False when one ETag is a local content digest and the other is not (one recorded before local
 * sources digested content, or across the size limit): they cannot tell whether the content changed.
 */
export function comparableEtags(a: string, b: string): boolean {
  return a.startsWith(CONTENT_ETAG_PREFIX) === b.startsWith(CONTENT_ETAG_PREFIX);
}

/** A Storage rooted at a local folder. */
export class LocalStorage implements Storage {
  readonly uri: string;
  /** Absolute path of the root folder (need not exist yet). */
  readonly root: string;
  private readonly digestMax: number;

  constructor(rootDir: string, opts: LocalStorageOptions = {}) {
    this.digestMax = opts.contentDigestMaxBytes ?? 0;
    this.root = path.resolve(rootDir);
    const href = pathToFileURL(this.root).href;
    this.uri = href.endsWith('/') ? href : `${href}/`;
  }

  /** A LocalStorage rooted at `rootDir` (relative paths resolve against the working directory). */
  static at(rootDir: string): LocalStorage {
    return new LocalStorage(rootDir);
  }

  /** Absolute path of `key`; throws UnsafeKeyError for keys that are not plain relative paths. */
  localPath(key: string): string {
    assertSafeKey(key, this.uri);
    const full = path.join(this.root, ...key.split('/'));
    // Belt and braces: the segment checks above already rule this out.
    const rel = path.relative(this.root, full);
    if (rel === '' || rel.split(path.sep)[0] === '..' || path.isAbsolute(rel))
      throw new UnsafeKeyError(key, this.uri);
    return full;
  }

  async *list(opts: ListOptions = {}): AsyncIterable<ListPage> {
    const pageSize = pageSizeOf(opts);
    let page = emptyPage();
    let yielded = false;
    for await (const run of this.entries(opts, opts.deferContentEtags === true)) {
      opts.signal?.throwIfAborted();
      for (const entry of run) {
        if ('object' in entry) page.objects.push(entry.object);
        else page.commonPrefixes.push(entry.commonPrefix);
        // Like S3, objects and common prefixes both count towards the page size.
        if (page.objects.length + page.commonPrefixes.length >= pageSize) {
          yield page;
          yielded = true;
          page = emptyPage();
        }
      }
    }
    const hasEntries = page.objects.length + page.commonPrefixes.length > 0;
    if (hasEntries || !yielded) yield page;
  }

  listAll(opts: ListOptions = {}): Promise<ListResult> {
    return gatherPages(this.list(opts));
  }

  /** Whether the root folder exists (a listing of a missing folder is empty, like an empty one). */
  async inspectRoot(): Promise<RootKind> {
    try {
      return (await fsp.stat(this.root)).isDirectory() ? 'folder' : 'file';
    } catch (err) {
      if (isMissing(err)) return 'missing';
      throw this.fsError('stat', '', err);
    }
  }

  async identify(
    objects: readonly ObjectInfo[],
    opts: { signal?: AbortSignal } = {},
  ): Promise<ObjectInfo[]> {
    const limit = pLimit(IDENTIFY_CONCURRENCY);
    return Promise.all(
      objects.map((o) =>
        limit(async () => {
          opts.signal?.throwIfAborted();
          return this.digestMax === 0 ||
            o.size > this.digestMax ||
            o.etag.startsWith(CONTENT_ETAG_PREFIX)
            ? o
            : ((await this.head(o.key)) ?? o);
        }),
      ),
    );
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const file = this.localPath(key);
    const st = await this.statOrNull(file, key);
    return st ? this.infoOf(key, file, st) : null;
  }

  async read(key: string, range?: ByteRange): Promise<Uint8Array | null> {
    checkRange(range, key);
    const file = this.localPath(key);
    const handle = await this.openOrNull(file, key);
    if (!handle) return null;
    try {
      const st = await handle.stat();
      if (!st.isFile()) return null;
      const [start, endExclusive] = clamp(range, st.size);
      return await readFully(handle, start, endExclusive - start);
    } catch (err) {
      throw this.fsError('read', key, err);
    } finally {
      await handle.close();
    }
  }

  async readStream(key: string, range?: ByteRange): Promise<Readable> {
    checkRange(range, key);
    const file = this.localPath(key);
    const handle = await this.openOrNull(file, key);
    if (!handle) throw notFoundError(key, this.uri);
    let st;
    try {
      st = await handle.stat();
    } catch (err) {
      await handle.close();
      throw this.fsError('read', key, err);
    }
    const [start, endExclusive] = clamp(range, st.size);
    if (!st.isFile() || endExclusive <= start) {
      await handle.close();
      if (!st.isFile()) throw notFoundError(key, this.uri);
      return Readable.from([]);
    }
    // createReadStream's `end` is inclusive, like HTTP ranges; it closes the handle when done.
    return handle.createReadStream({ start, end: endExclusive - 1 });
  }

  async download(
    key: string,
    localPath: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ObjectInfo> {
    opts.signal?.throwIfAborted();
    const src = this.localPath(key);
    const info = await this.head(key);
    if (!info) throw notFoundError(key, this.uri);
    const dest = path.resolve(localPath);
    await makeFolder(path.dirname(dest));
    const tmp = tempPath(path.dirname(dest));
    try {
      await fsp.copyFile(src, tmp);
      await fsp.rename(tmp, dest);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      if (isMissing(err)) throw notFoundError(key, this.uri, err);
      throw this.fsError('download', key, err);
    }
    return info;
  }

  async write(key: string, body: Body, opts: WriteOptions = {}): Promise<void> {
    opts.signal?.throwIfAborted();
    const file = this.localPath(key);
    const bytes = bodyBytes(body);
    await this.inParentDir(key, file, async (dir) => {
      const tmp = await writeTemp(dir, bytes);
      await renameOrCleanup(tmp, file);
    });
  }

  async upload(key: string, localPath: string, opts: WriteOptions = {}): Promise<void> {
    opts.signal?.throwIfAborted();
    const file = this.localPath(key);
    await this.assertSourceFile(key, localPath);
    await this.inParentDir(key, file, async (dir) => {
      const tmp = tempPath(dir);
      try {
        await fsp.copyFile(localPath, tmp);
        // A commit naming this file is flushed when written; the file must be on disk first,
        // or a power cut could leave a durable commit pointing at an empty data file.
        await syncFile(tmp);
      } catch (err) {
        await fsp.rm(tmp, { force: true });
        throw err;
      }
      await renameOrCleanup(tmp, file);
    });
  }

  async writeIfAbsent(key: string, body: Body, opts: WriteOptions = {}): Promise<boolean> {
    opts.signal?.throwIfAborted();
    const file = this.localPath(key);
    const bytes = bodyBytes(body);
    return this.inParentDir(key, file, async (dir) => {
      // Write the full content first, then link: link(2) fails with EEXIST instead of
      // replacing, and readers never see a partial file.
      const tmp = await writeTemp(dir, bytes);
      try {
        await fsp.link(tmp, file);
        // The new name itself survives a power cut only once its folder is flushed: a commit
        // reported done must not vanish after its loaded files' messages were deleted.
        await syncFolder(dir);
        return true;
      } catch (err) {
        if (errCode(err) === 'EEXIST') return false;
        throw err;
      } finally {
        await fsp.rm(tmp, { force: true });
      }
    });
  }

  async delete(keys: string[]): Promise<void> {
    // Validate every key before deleting anything.
    const files = keys.map((key) => ({ key, file: this.localPath(key) }));
    for (let i = 0; i < files.length; i += DELETE_CONCURRENCY) {
      await Promise.all(
        files.slice(i, i + DELETE_CONCURRENCY).map(({ key, file }) => this.deleteOne(key, file)),
      );
    }
  }

  child(prefix: string): LocalStorage {
    const clean = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
    const opts = { contentDigestMaxBytes: this.digestMax };
    return clean === ''
      ? new LocalStorage(this.root, opts)
      : new LocalStorage(this.localPath(clean), opts);
  }

  // --- listing ---------------------------------------------------------------

  /** Objects and common prefixes in key order, filtered like S3 ListObjectsV2, a run at a time. */
  private async *entries(opts: ListOptions, byStats: boolean): AsyncGenerator<Entry[]> {
    const prefix = opts.prefix ?? '';
    const { delimiter, startAfter } = opts;
    const accept = (key: string) =>
      key.startsWith(prefix) && (startAfter === undefined || compareKeys(key, startAfter) > 0);
    const visit = (dirKey: string): Visit => visitFolder(dirKey, prefix, delimiter, startAfter);
    // Start at the deepest folder the prefix names; a string prefix may end mid-name.
    const startDir = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    if (startDir !== '') this.localPath(startDir.slice(0, -1)); // refuse `../` prefixes
    let lastPrefix: string | undefined;
    for await (const run of this.walk(startDir, visit, accept, byStats)) {
      const out: Entry[] = [];
      for (const object of run) {
        const cut = delimiter ? object.key.indexOf(delimiter, prefix.length) : -1;
        if (cut < 0) {
          out.push({ object });
          continue;
        }
        // Keys are sorted, so keys sharing a common prefix arrive together.
        const commonPrefix = object.key.slice(0, cut + delimiter!.length);
        if (commonPrefix !== lastPrefix) out.push({ commonPrefix });
        lastPrefix = commonPrefix;
      }
      if (out.length > 0) yield out;
    }
  }

  /**
   * Accepted keys under folder `dirKey` (`''` or ending with `/`), in UTF-8 byte order, in runs
   * (a run of a folder's files at a time: one generator step per object cost more than its stat).
   * Entries of one folder are sorted by name, with `/` appended to folder names: all keys
   * below folder `a` start with `a/`, so this yields the same order as sorting all keys.
   */
  private async *walk(
    dirKey: string,
    visit: (dirKey: string) => Visit,
    accept: (key: string) => boolean,
    byStats: boolean,
  ): AsyncGenerator<ObjectInfo[]> {
    const dir = dirKey === '' ? this.root : path.join(this.root, ...dirKey.slice(0, -1).split('/'));
    const entries = await this.sortedEntries(dir, dirKey);
    for (let i = 0; i < entries.length;) {
      const { name, isDir } = entries[i]!;
      if (!isDir) {
        // A run of files is statted a few at a time: one by one, a large folder's stats were its listing's time.
        const run: { key: string; file: string }[] = [];
        for (; i < entries.length && !entries[i]!.isDir && run.length < STAT_CONCURRENCY; i++) {
          const key = dirKey + entries[i]!.name;
          if (accept(key)) run.push({ key, file: path.join(dir, entries[i]!.name) });
        }
        const infos = await this.listedInfos(run, byStats);
        const found = infos.filter((info): info is ObjectInfo => info !== null);
        if (found.length > 0) yield found;
        continue;
      }
      i++;
      const sub = `${dirKey}${name}/`;
      const mode = visit(sub);
      if (mode === 'skip') continue;
      for await (const infos of this.walk(sub, visit, accept, byStats)) {
        // Every key below this folder falls in one common prefix: one key is enough.
        if (mode === 'one') {
          yield infos.slice(0, 1);
          break;
        }
        yield infos;
      }
    }
  }

  /** Files and folders of `dir`, sorted for key order; temp files and unusable names left out. */
  private async sortedEntries(
    dir: string,
    dirKey: string,
  ): Promise<{ name: string; isDir: boolean }[]> {
    let dirents;
    try {
      dirents = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return [];
      throw this.fsError('list', dirKey, err);
    }
    const entries: { name: string; isDir: boolean; sortKey: string }[] = [];
    for (const d of dirents) {
      // Symlinked folders are not followed (cycles). A name with a backslash (`d\e.csv`, legal
      // outside Windows) is listed like any other: leaving it out skipped its file silently.
      if (TEMP_NAME.test(d.name)) continue;
      const isDir = d.isDirectory();
      if (!isDir && !d.isFile() && !d.isSymbolicLink()) continue;
      entries.push({ name: d.name, isDir, sortKey: isDir ? `${d.name}/` : d.name });
    }
    return entries.sort((a, b) => compareKeys(a.sortKey, b.sortKey));
  }

  // --- helpers ---------------------------------------------------------------

  /**
   * ObjectInfo of a file: a small file (`contentDigestMaxBytes`) is known by a digest of its
   * content, read now; when its stats change while it is read (a writer), by its new stats, so
   * the ETag never claims a content it did not hash. Others by their stats (`statInfo`).
   */
  private async infoOf(key: string, file: string, st: BigIntStats): Promise<ObjectInfo> {
    if (this.digestMax === 0 || st.size > BigInt(this.digestMax)) return statInfo(key, st);
    const handle = await this.openOrNull(file, key);
    if (!handle) return statInfo(key, st);
    try {
      // Read the size the stats gave, then the stats of what was read: the same stats, the same version.
      const bytes = await readFully(handle, 0, Number(st.size));
      return contentInfo(key, st, bytes, await handle.stat({ bigint: true }));
    } catch (err) {
      throw this.fsError('read', key, err);
    } finally {
      await handle.close();
    }
  }

  /** `infoOf` with synchronous calls (a listing's run of files, `listedInfos`). */
  private infoOfSync(key: string, file: string, st: BigIntStats): ObjectInfo {
    if (this.digestMax === 0 || st.size > BigInt(this.digestMax)) return statInfo(key, st);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (err) {
      if (isMissing(err)) return statInfo(key, st);
      throw this.fsError('open', key, err);
    }
    try {
      const bytes = readFullySync(fd, Number(st.size));
      return contentInfo(key, st, bytes, fstatSync(fd, { bigint: true }));
    } catch (err) {
      throw this.fsError('read', key, err);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * A run of listed files' ObjectInfos (null when gone or not a regular file; by their stats alone
   * when `byStats`), by synchronous calls: a stat through the thread pool costs about 18 µs of
   * CPU, a synchronous one 5, and a small file's digest takes four such calls (a listing of a
   * million files spent most of its time there). The run is short (STAT_CONCURRENCY files, each
   * read at most `contentDigestMaxBytes`), and the event loop gets its turn after it.
   */
  private async listedInfos(
    run: readonly { key: string; file: string }[],
    byStats: boolean,
  ): Promise<(ObjectInfo | null)[]> {
    const infos = run.map(({ key, file }) => {
      let st: BigIntStats;
      try {
        st = statSync(file, { bigint: true });
      } catch (err) {
        if (isMissing(err)) return null;
        throw this.fsError('stat', key, err);
      }
      if (!st.isFile()) return null;
      return byStats ? statInfo(key, st) : this.infoOfSync(key, file, st);
    });
    await new Promise((resolve) => setImmediate(resolve));
    return infos;
  }

  /** Regular-file stats of `file`, or null when missing or not a regular file. */
  private async statOrNull(file: string, key: string): Promise<BigIntStats | null> {
    try {
      const st = await fsp.stat(file, { bigint: true });
      return st.isFile() ? st : null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw this.fsError('stat', key, err);
    }
  }

  private async openOrNull(file: string, key: string): Promise<fsp.FileHandle | null> {
    try {
      return await fsp.open(file, 'r');
    } catch (err) {
      if (isMissing(err)) return null;
      throw this.fsError('open', key, err);
    }
  }

  /**
   * Run `fn` with the key's parent folder created. A concurrent delete may remove a folder
   * that just became empty between mkdir and our write, so ENOENT is retried a few times.
   */
  private async inParentDir<T>(
    key: string,
    file: string,
    fn: (dir: string) => Promise<T>,
  ): Promise<T> {
    const dir = path.dirname(file);
    for (let attempt = 1; ; attempt++) {
      try {
        await makeFolder(dir);
        return await fn(dir);
      } catch (err) {
        if (errCode(err) === 'ENOENT' && attempt < 3) continue;
        if (errCode(err) === 'EEXIST' || errCode(err) === 'ENOTDIR')
          throw this.parentIsFileError(key, err);
        throw this.fsError('write', key, err);
      }
    }
  }

  /** Unlike S3, a folder cannot hold both a file `a` and a file `a/x`. */
  private parentIsFileError(key: string, cause: unknown): StorageError {
    return new StorageError(
      `[storage] cannot write ${JSON.stringify(key)} in ${this.uri}: a parent path is a file (a local folder cannot hold both \`a\` and \`a/x\`)`,
      { kind: 'terminal', context: { key, uri: this.uri, code: errCode(cause) }, cause },
    );
  }

  private async assertSourceFile(key: string, localPath: string): Promise<void> {
    try {
      const st = await fsp.stat(localPath);
      if (st.isFile()) return;
    } catch (err) {
      throw this.fsError('upload', key, err, { localPath });
    }
    throw new StorageError(`[storage] upload source is not a file: ${localPath}`, {
      kind: 'usage',
      context: { key, uri: this.uri, localPath },
    });
  }

  private async deleteOne(key: string, file: string): Promise<void> {
    try {
      await fsp.unlink(file);
    } catch (err) {
      // Missing keys are fine; a folder is not an object (EISDIR on Linux, EPERM on macOS).
      const code = errCode(err);
      if (isMissing(err) || code === 'EISDIR') return;
      if (code === 'EPERM' && (await isDirectory(file))) return;
      throw this.fsError('delete', key, err);
    }
    await this.pruneEmptyFolders(path.dirname(file));
  }

  /** Remove `dir` and its parents while empty, stopping at the root (folders are not objects). */
  private async pruneEmptyFolders(dir: string): Promise<void> {
    while (dir !== this.root && dir.startsWith(this.root + path.sep)) {
      try {
        await fsp.rmdir(dir);
      } catch (err) {
        if (errCode(err) !== 'ENOENT') return; // not empty (or busy): stop quietly
      }
      dir = path.dirname(dir);
    }
  }

  private fsError(
    op: string,
    key: string,
    err: unknown,
    extra: Record<string, unknown> = {},
  ): TidemarkError {
    if (err instanceof TidemarkError) return err;
    const code = errCode(err);
    const refused = code === undefined ? undefined : REFUSED[code];
    if (refused !== undefined) {
      // The OS's reason and the exact path it refused (a parent folder, maybe), not a bare code.
      const at = (err as { path?: unknown }).path;
      const where =
        typeof at === 'string'
          ? at
          : key === ''
            ? this.root
            : path.join(this.root, ...key.split('/'));
      return new StorageError(
        `[storage] ${op} failed for ${JSON.stringify(key)} in ${this.uri}: ${refused} (${code}) at ${where}`,
        {
          kind: 'terminal',
          context: { key, uri: this.uri, code, path: where, ...extra },
          cause: err,
        },
      );
    }
    return new StorageError(
      `[storage] ${op} failed for ${JSON.stringify(key)} in ${this.uri}${code ? ` (${code})` : ''}`,
      {
        kind: code && TRANSIENT.has(code) ? 'transient' : 'terminal',
        context: {
          key,
          uri: this.uri,
          code,
          ...(isMissing(err) ? { notFound: true } : {}),
          ...extra,
        },
        cause: err,
      },
    );
  }
}

/**
 * Refuse keys that are not plain relative paths: empty, absolute, NUL, a backslash where it is a
 * separator (Windows), and `.`/`..`/empty segments (they alias or escape other keys).
 */
function assertSafeKey(key: string, uri: string): void {
  const bad =
    typeof key !== 'string' ||
    key === '' ||
    key.includes('\0') ||
    (path.sep === '\\' && key.includes('\\')) ||
    key.startsWith('/') ||
    path.isAbsolute(key) ||
    key.split('/').some((seg) => seg === '' || seg === '.' || seg === '..');
  if (bad) throw new UnsafeKeyError(String(key), uri);
}

/**
 * Folder pruning for a listing. `dirKey` ends with `/`; every key below it starts with it.
 * - skip when no key below can match the prefix, or all keys below are <= startAfter;
 * - 'one' when a delimiter occurrence lies inside dirKey after the prefix: every key below
 *   rolls up into the same common prefix, so one key proves it exists (empty folders don't).
 */
function visitFolder(
  dirKey: string,
  prefix: string,
  delimiter?: string,
  startAfter?: string,
): Visit {
  if (!dirKey.startsWith(prefix) && !prefix.startsWith(dirKey)) return 'skip';
  if (
    startAfter !== undefined &&
    compareKeys(dirKey, startAfter) < 0 &&
    !startAfter.startsWith(dirKey)
  )
    return 'skip';
  if (delimiter && dirKey.startsWith(prefix) && dirKey.indexOf(delimiter, prefix.length) >= 0)
    return 'one';
  return 'all';
}

/**
 * ObjectInfo from stats. The etag is a digest of size, mtime and ctime in nanoseconds and inode:
 * a write renamed into place has a new inode, and a rewrite in place (same inode, same size, the
 * mtime set back by `cp -p` or `touch -d`) still moves the ctime, which no user can set, so any
 * change of the content changes the etag. A bare `touch` (or chmod) changes it too: it is not a
 * content hash (small files of a source are known by one: `infoOf`); append mode then finds the
 * file's rows unchanged and appends nothing, a MERGE counts them unchanged.
 */
function statInfo(key: string, st: BigIntStats): ObjectInfo {
  return {
    key,
    size: Number(st.size),
    lastModified: new Date(Number(st.mtimeNs / 1_000_000n)),
    etag: statDigest(st),
  };
}

function statDigest(st: BigIntStats): string {
  return createHash('sha256')
    .update(`${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`)
    .digest('hex')
    .slice(0, 32);
}

function emptyPage(): ListPage {
  return { objects: [], commonPrefixes: [], serverTime: new Date() };
}

/** [start, endExclusive) of a range clipped to the object size (empty when start is past the end). */
function clamp(range: ByteRange | undefined, size: number): [number, number] {
  const start = range?.start ?? 0;
  const endExclusive = Math.min(size, range?.end === undefined ? size : range.end + 1);
  return [start, Math.max(start, endExclusive)];
}

/**
 * ObjectInfo of a small file from its content, read with stats `st`: by the digest of `bytes`
 * when all of them were read and the stats `after` the read are the same version; else by the
 * newer stats, so the ETag never claims a content it did not hash.
 */
function contentInfo(
  key: string,
  st: BigIntStats,
  bytes: Uint8Array,
  after: BigIntStats,
): ObjectInfo {
  if (bytes.length !== Number(st.size) || statDigest(after) !== statDigest(st))
    return statInfo(key, after.isFile() ? after : st);
  const etag = CONTENT_ETAG_PREFIX + createHash('sha256').update(bytes).digest('hex').slice(0, 32);
  return { ...statInfo(key, st), etag };
}

function readFullySync(fd: number, length: number): Uint8Array {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const bytesRead = readSync(fd, buf, done, length - done, done);
    if (bytesRead === 0) break; // file shrank meanwhile
    done += bytesRead;
  }
  return done === length ? buf : buf.subarray(0, done);
}

async function readFully(
  handle: fsp.FileHandle,
  position: number,
  length: number,
): Promise<Uint8Array> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break; // file shrank meanwhile
    done += bytesRead;
  }
  return done === length ? buf : buf.subarray(0, done);
}

function tempPath(dir: string): string {
  return path.join(dir, `.tmp-${randomUUID()}`);
}

/** Write `bytes` to a new temp file in `dir`, flushed to disk; returns its path. */
async function writeTemp(dir: string, bytes: Uint8Array): Promise<string> {
  const tmp = tempPath(dir);
  const handle = await fsp.open(tmp, 'wx');
  try {
    await handle.writeFile(bytes);
    // Flush before the rename/link makes it visible: a crash must not leave an empty commit file.
    await handle.sync();
  } catch (err) {
    await handle.close();
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  return tmp;
}

/** fsync a file's contents (a temp file before it is renamed into place). */
async function syncFile(file: string): Promise<void> {
  const handle = await fsp.open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsync a folder so an entry created in it is durable; a no-op where folders cannot be synced. */
async function syncFolder(dir: string): Promise<void> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(dir, 'r');
  } catch {
    return; // Windows cannot open a folder; its file system orders the link itself.
  }
  try {
    await handle.sync();
  } catch (err) {
    if (!['EINVAL', 'EISDIR', 'EPERM', 'EBADF'].includes(errCode(err) ?? '')) throw err;
  } finally {
    await handle.close();
  }
}

async function renameOrCleanup(tmp: string, file: string): Promise<void> {
  try {
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
}

async function isDirectory(file: string): Promise<boolean> {
  return fsp.stat(file).then(
    (st) => st.isDirectory(),
    () => false,
  );
}

function errCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function isMissing(err: unknown): boolean {
  const code = errCode(err);
  return code !== undefined && MISSING.has(code);
}
