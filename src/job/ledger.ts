/**
 * The ledger of an append job discovering by modification time: every file it loaded (key and the
 * ETag loaded), kept after the file left the settle window, so a file touched or copied in place
 * later (a re-sync, a re-delivery, a metadata copy on S3 that keeps the ETag) is not taken for a
 * new one and appended again. The discovery state only remembers the files inside the window.
 *
 * Where it lives: small Parquet files in the table folder, `_tidemark/ledger/<job>/<uuid>.parquet`
 * (columns key, etag, batch), listed in the job state (`ledger`). Each batch writes the files it
 * loaded as one new file before its commit, which lists it (a failed commit leaves an unlisted
 * orphan); past MAX_LEDGER_FILES all are rewritten into one (the newest ETag per key). Files
 * rewritten away stay listed under `dropped` for MAX_DROP_GRACE_MS (a concurrent run may still read
 * them), then are deleted. A run looks up only the keys discovery took for new.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { DiscoveredFile } from '../discovery/index.js';
import { safeReadPath } from '../engine/safe-alias.js';
import { str } from '../engine/sql.js';
import { DeltaLogError } from '../errors.js';
import type { JobScope } from './scope.js';
import { localTableFile } from './table-file.js';
import { MAX_DROP_GRACE_MS } from './tombstones/plan.js';

/** Folder of the jobs' ledgers, relative to the table root. */
const LEDGER_FOLDER = '_tidemark/ledger';
/** Ledger files a job keeps before they are rewritten into one. */
export const MAX_LEDGER_FILES = 16;
/** Keys per lookup or insert statement. */
const CHUNK = 1000;

/** The `ledger` field of the job state (absent: nothing recorded yet). */
export interface LedgerState {
  files: Array<{ path: string; rows: number }>;
  dropped: Array<{ path: string; droppedAt: string }>;
}

/** True when the job keeps a ledger: append mode, discovery by modification time. */
export function keepsLedger(job: JobScope['job']): boolean {
  return job.target.mode === 'append' && job.source.discover.by === 'modified';
}

/** The ETag last loaded of each of `keys` the ledger holds. */
export async function lookUpLedger(scope: JobScope, ledger: LedgerState | undefined, keys: readonly string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (!ledger || ledger.files.length === 0 || keys.length === 0) return found;
  const paths = await Promise.all(ledger.files.map((f) => localCopy(scope, f.path)));
  for (let i = 0; i < keys.length; i += CHUNK) {
    const chunk = keys.slice(i, i + CHUNK);
    const rows = await scope.session.all(
      `SELECT key, arg_max(etag, batch) AS etag FROM read_parquet([${paths.map(str).join(', ')}]) WHERE key IN (${chunk.map(str).join(', ')}) GROUP BY key`,
    );
    for (const r of rows) found.set(String(r['key']), String(r['etag']));
  }
  return found;
}

/**
 * The ledger after a batch that loaded `loaded` (as batch number `batch`): a new file of them, or
 * every entry rewritten into one; dropped files past their grace period deleted. Written before
 * the commit that lists it.
 */
export async function recordInLedger(scope: JobScope, ledger: LedgerState | undefined, loaded: readonly DiscoveredFile[], batch: number, now = Date.now()): Promise<LedgerState | undefined> {
  const before: LedgerState = ledger ?? { files: [], dropped: [] };
  const due = before.dropped.filter((d) => Date.parse(d.droppedAt) + MAX_DROP_GRACE_MS <= now);
  const own = due.map((d) => d.path).filter((p) => isLedgerPath(scope.job.name, p));
  if (own.length > 0) await scope.table.storage.delete(own).catch(() => undefined);
  let dropped = before.dropped.filter((d) => !due.includes(d));
  if (loaded.length === 0) return before.files.length + dropped.length === 0 ? undefined : { files: before.files, dropped };
  const values = valuesSql(loaded, batch);
  let files = before.files;
  if (files.length + 1 > MAX_LEDGER_FILES) {
    const paths = await Promise.all(files.map((f) => localCopy(scope, f.path)));
    const all = `SELECT key, etag, batch FROM read_parquet([${paths.map(str).join(', ')}]) UNION ALL ${values}`;
    files = [await write(scope, `SELECT key, arg_max(etag, batch) AS etag, max(batch) AS batch FROM (${all}) GROUP BY key ORDER BY key`)];
    const at = new Date(now).toISOString();
    dropped = [...dropped, ...before.files.map((f) => ({ path: f.path, droppedAt: at }))];
  } else {
    files = [...files, await write(scope, values)];
  }
  return { files, dropped };
}

/** The loaded files as rows (key, etag, batch). */
function valuesSql(loaded: readonly DiscoveredFile[], batch: number): string {
  const rows = loaded.map((f) => `(${str(f.key)}, ${str(f.etag)}, ${batch}::BIGINT)`);
  const parts: string[] = [];
  for (let i = 0; i < rows.length; i += CHUNK) parts.push(`SELECT * FROM (VALUES ${rows.slice(i, i + CHUNK).join(', ')}) AS t(key, etag, batch)`);
  return parts.join(' UNION ALL ');
}

/** Write `sql`'s rows as a new ledger file of the job; its state entry. */
async function write(scope: JobScope, sql: string): Promise<{ path: string; rows: number }> {
  const id = randomUUID();
  const local = join(await scope.spool.folder('ledger-out'), `${id}.parquet`);
  await scope.session.run(`COPY (${sql}) TO ${str(local)} (FORMAT parquet)`);
  const row = await scope.session.one(`SELECT count(*) AS n FROM read_parquet(${str(safeReadPath(local))})`);
  const path = ledgerPath(scope.job.name, id);
  scope.ctx.signal?.throwIfAborted();
  await scope.table.storage.upload(path, local, scope.ctx.signal ? { signal: scope.ctx.signal } : {});
  return { path, rows: Number(row?.['n'] ?? 0) };
}

/** A new ledger file's key (the job name is validated by the config: letters, digits, `_.-`). */
export function ledgerPath(job: string, id: string): string {
  return `${LEDGER_FOLDER}/${job}/${id}.parquet`;
}

/** True for a path this module could have written for `job` (state is data: never trust a path). */
export function isLedgerPath(job: string, path: string): boolean {
  const prefix = `${LEDGER_FOLDER}/${job}/`;
  return path.startsWith(prefix) && /^[0-9a-f-]{36}\.parquet$/.test(path.slice(prefix.length));
}

/** A local, glob-safe path of a ledger file (./table-file.ts). */
async function localCopy(scope: JobScope, path: string): Promise<string> {
  const { storage } = scope.table;
  const job = scope.job.name;
  if (!isLedgerPath(job, path)) {
    throw new DeltaLogError(`[job] job state of ${job} in ${storage.uri} lists ${JSON.stringify(path)} as a ledger file`, { context: { uri: storage.uri, key: path, job } });
  }
  return localTableFile(
    {
      storage,
      spool: scope.spool,
      folder: 'ledger-in',
      ...(scope.ctx.signal ? { signal: scope.ctx.signal } : {}),
      missing: (cause) =>
        new DeltaLogError(`[job] ledger file ${path} of job ${job}, listed in the job state of ${storage.uri}, is missing or unreadable`, {
          context: { uri: storage.uri, key: path, job },
          cause,
        }),
    },
    path,
  );
}
