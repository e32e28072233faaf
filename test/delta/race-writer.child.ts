/**
 * A writer process for the two-writer race test. Reads one JSON command per stdin line,
 * commits, and answers one JSON line on stdout:
 *   {"op":"append","readVersion":V,"paths":[...]}           blind append planned on V
 *   {"op":"rewrite","readVersion":V,"remove":P,"add":Q}     merge-like rewrite of P, read the whole table
 *   {"op":"appendMany","count":N,"prefix":S}                N appends back to back, each planned on a stale version
 */
import { createInterface } from 'node:readline';
import { commitWithRetry } from '../../src/delta/commit.js';
import type { CommitRequest } from '../../src/delta/transaction.js';
import { CommitConflictError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { addAction, appendRequest, removeAction } from './commit-helpers.js';

const table = new LocalStorage(process.argv[2]!);

type Command =
  | { op: 'append'; readVersion: number; paths: string[] }
  | { op: 'rewrite'; readVersion: number; remove: string; add: string }
  | { op: 'appendMany'; count: number; prefix: string };

async function commitOne(request: CommitRequest): Promise<object> {
  try {
    const result = await commitWithRetry(table, request, { maxAttempts: 50 });
    return { ok: true, ...result };
  } catch (err) {
    if (err instanceof CommitConflictError) return { ok: false, conflict: err.conflict };
    throw err;
  }
}

async function run(cmd: Command): Promise<object> {
  if (cmd.op === 'append') return commitOne(appendRequest(cmd.readVersion, cmd.paths));
  if (cmd.op === 'rewrite') {
    return commitOne({
      actions: [removeAction(cmd.remove), addAction(cmd.add)],
      operation: 'MERGE',
      read: { readVersion: cmd.readVersion, partitions: 'all', files: [cmd.remove], appIds: [] },
      isBlindAppend: false,
    });
  }
  const commits: object[] = [];
  for (let i = 0; i < cmd.count; i++) {
    const paths = [`${cmd.prefix}-${i}-a.parquet`, `${cmd.prefix}-${i}-b.parquet`];
    commits.push({ paths, ...(await commitOne(appendRequest(0, paths))) });
  }
  return { commits };
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const reply = await run(JSON.parse(line) as Command).catch((err: unknown) => ({
    error: String(err),
  }));
  process.stdout.write(JSON.stringify(reply) + '\n');
}
