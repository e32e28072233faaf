/**
 * Small builders for commit tests: actions are built by hand (the commit loop does not look
 * inside data files), and the log is replayed directly from the JSON commits.
 */
import type { Action, AddFile, CommitInfo, RemoveFile } from '../../src/delta/actions.js';
import { parseCommit } from '../../src/delta/actions.js';
import { commitKey } from '../../src/delta/log-files.js';
import type { CommitRequest } from '../../src/delta/transaction.js';
import type { Storage } from '../../src/storage/storage.js';

export const SCHEMA = JSON.stringify({
  type: 'struct',
  fields: [
    { name: 'id', type: 'long', nullable: true, metadata: {} },
    { name: 'p', type: 'string', nullable: true, metadata: {} },
  ],
});

/** protocol + metaData for a table partitioned by `p`. */
export function createActions(): Action[] {
  return [
    { protocol: { minReaderVersion: 1, minWriterVersion: 2 } },
    {
      metaData: {
        id: '00000000-0000-4000-8000-000000000001',
        format: { provider: 'parquet', options: {} },
        schemaString: SCHEMA,
        partitionColumns: ['p'],
        configuration: {},
        createdTime: 1,
      },
    },
  ];
}

export function addAction(path: string, p: string | null = 'a', dataChange = true): Action {
  const add: AddFile = {
    path,
    partitionValues: { p },
    size: 100,
    modificationTime: 1,
    dataChange,
    stats: '{"numRecords":1}',
  };
  return { add };
}

export function removeAction(path: string, p: string | null = 'a'): { remove: RemoveFile } {
  return {
    remove: {
      path,
      dataChange: true,
      deletionTimestamp: 1,
      extendedFileMetadata: true,
      partitionValues: { p },
      size: 100,
    },
  };
}

export function createRequest(): CommitRequest {
  return {
    actions: createActions(),
    operation: 'CREATE TABLE',
    operationParameters: { partitionBy: ['p'], isManaged: false },
    read: { readVersion: -1, partitions: [], files: [], appIds: [] },
    isBlindAppend: false,
  };
}

export function appendRequest(
  readVersion: number,
  paths: string[],
  extra: Action[] = [],
): CommitRequest {
  return {
    actions: [...extra, ...paths.map((path) => addAction(path))],
    operation: 'WRITE',
    operationParameters: { mode: 'Append', partitionBy: [] },
    operationMetrics: {
      numFiles: String(paths.length),
      numOutputRows: String(paths.length),
      numOutputBytes: '100',
    },
    read: { readVersion, partitions: [], files: [], appIds: [] },
    isBlindAppend: true,
  };
}

/** Actions of one commit file, or null when it does not exist. */
export async function readCommit(storage: Storage, version: number): Promise<Action[] | null> {
  const bytes = await storage.read(commitKey(version));
  return bytes === null
    ? null
    : parseCommit(Buffer.from(bytes).toString('utf8'), version, storage.uri);
}

export function commitInfoOf(actions: Action[]): CommitInfo {
  const first = actions[0];
  if (!first || !('commitInfo' in first)) throw new Error('commitInfo is not the first action');
  return first.commitInfo;
}

export function addPaths(actions: Action[]): string[] {
  return actions.flatMap((a) => ('add' in a ? [a.add.path] : []));
}

/** Replay every commit from 0: the latest version and the live file paths. */
export async function replayPaths(
  storage: Storage,
): Promise<{ version: number; live: Set<string> }> {
  const live = new Set<string>();
  let version = -1;
  for (;;) {
    const actions = await readCommit(storage, version + 1);
    if (!actions) break;
    version++;
    for (const a of actions) {
      if ('add' in a) live.add(a.add.path);
      if ('remove' in a) live.delete(a.remove.path);
    }
  }
  return { version, live };
}
