/**
 * A Storage wrapper that counts calls per method, to assert I/O behaviour (how many LIST
 * requests, which keys were read). Each listing page counts as one `list` request.
 */
import type { Readable } from 'node:stream';
import { gatherPages } from '../../src/storage/driver-helpers.js';
import type {
  Body,
  ByteRange,
  ListOptions,
  ListPage,
  ListResult,
  ObjectInfo,
  Storage,
  WriteOptions,
} from '../../src/storage/storage.js';

export type CountedMethod =
  | 'list'
  | 'head'
  | 'read'
  | 'readStream'
  | 'download'
  | 'write'
  | 'upload'
  | 'writeIfAbsent'
  | 'delete';

export interface CallRecord {
  method: CountedMethod;
  /** The key (list: the prefix; delete: the keys joined by `,`). Relative to the wrapped storage. */
  key: string;
}

export interface CountingStorage extends Storage {
  /** Calls per method; `list` counts pages (LIST requests), not list() calls. */
  readonly counts: Record<CountedMethod, number>;
  /** Every call in order. */
  readonly calls: CallRecord[];
  /** Total of all counted calls. */
  total(): number;
  /** Zero the counters. */
  reset(): void;
  child(prefix: string): CountingStorage;
}

function zeroCounts(): Record<CountedMethod, number> {
  return {
    list: 0,
    head: 0,
    read: 0,
    readStream: 0,
    download: 0,
    write: 0,
    upload: 0,
    writeIfAbsent: 0,
    delete: 0,
  };
}

/** Wrap `inner`; children share the counters (keys in `calls` are then relative to the child). */
export function countingStorage(inner: Storage): CountingStorage {
  return wrap(inner, { counts: zeroCounts(), calls: [] });
}

function wrap(
  inner: Storage,
  state: { counts: Record<CountedMethod, number>; calls: CallRecord[] },
): CountingStorage {
  const note = (method: CountedMethod, key: string) => {
    state.counts[method]++;
    state.calls.push({ method, key });
  };
  async function* list(opts: ListOptions = {}): AsyncIterable<ListPage> {
    for await (const page of inner.list(opts)) {
      note('list', opts.prefix ?? '');
      yield page;
    }
  }
  return {
    uri: inner.uri,
    counts: state.counts,
    calls: state.calls,
    total: () => Object.values(state.counts).reduce((a, b) => a + b, 0),
    reset() {
      for (const m of Object.keys(state.counts) as CountedMethod[]) state.counts[m] = 0;
      state.calls.length = 0;
    },
    list,
    listAll: (opts?: ListOptions): Promise<ListResult> => gatherPages(list(opts)),
    head: (key: string): Promise<ObjectInfo | null> => (note('head', key), inner.head(key)),
    read: (key: string, range?: ByteRange) => (note('read', key), inner.read(key, range)),
    readStream: (key: string, range?: ByteRange): Promise<Readable> => (
      note('readStream', key),
      inner.readStream(key, range)
    ),
    download: (key: string, localPath: string, opts?: { signal?: AbortSignal }) => (
      note('download', key),
      inner.download(key, localPath, opts)
    ),
    localPath: (key: string) => inner.localPath(key),
    write: (key: string, body: Body, opts?: WriteOptions) => (
      note('write', key),
      inner.write(key, body, opts)
    ),
    upload: (key: string, localPath: string, opts?: WriteOptions) => (
      note('upload', key),
      inner.upload(key, localPath, opts)
    ),
    writeIfAbsent: (key: string, body: Body, opts?: WriteOptions) => (
      note('writeIfAbsent', key),
      inner.writeIfAbsent(key, body, opts)
    ),
    delete: (keys: string[]) => (note('delete', keys.join(',')), inner.delete(keys)),
    child: (prefix: string) => wrap(inner.child(prefix), state),
    // Not counted: a stat of the root folder, no request to a store.
    ...(inner.inspectRoot ? { inspectRoot: () => inner.inspectRoot!() } : {}),
  };
}
