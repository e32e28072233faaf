/**
 * Reading a table loaded from the daily feed (scripts/lib/daily-feed.ts) back the way any Delta
 * reader does, and checking every commit of its log: the helpers of the scale-out tests.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { openTarget } from '../../src/job/open.js';
import type { FeedRow } from '../../scripts/lib/daily-feed.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';

type Setup = { job: JobConfig; storage: StorageConfig };

/** The latest snapshot and its rows, ordered by order_id (fresh table object, no caches). */
export async function readFeedTable(
  session: DuckSession,
  setup: Setup,
): Promise<{ snapshot: Snapshot | null; rows: FeedRow[] }> {
  const storage = openTarget(setup.job, setup.storage);
  const snapshot = await openTable(storage, session).snapshot();
  if (!snapshot) return { snapshot, rows: [] };
  const raw = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.all(
      `SELECT order_id::BIGINT AS order_id, order_date::VARCHAR AS order_date, status, seq::BIGINT AS seq, rid FROM (${relation}) ORDER BY order_id, rid`,
    ),
  );
  const rows = raw.map((r) => ({
    order_id: Number(r['order_id']),
    order_date: String(r['order_date']),
    status: String(r['status']),
    seq: Number(r['seq']),
    rid: String(r['rid']),
  }));
  return { snapshot, rows };
}

/** order_ids held more than once. */
export function duplicateOrders(rows: readonly FeedRow[]): number[] {
  const seen = new Set<number>();
  return rows
    .filter((r) => (seen.has(r.order_id) ? true : (seen.add(r.order_id), false)))
    .map((r) => r.order_id);
}

/**
 * Problems of a local table's log, replayed commit by commit: versions without gaps; each commit
 * one JSON object per line with commitInfo first, readVersion below its version; at most one txn
 * per appId, never moving back; every add a new live path of a file that exists, every remove of
 * a live file; no data file added twice. [] when the log is valid.
 */
export async function logProblems(root: string): Promise<string[]> {
  const log = path.join(root, '_delta_log');
  const names = (await fsp.readdir(log)).filter((n) => /^\d{20}\.json$/.test(n)).sort();
  const problems: string[] = [];
  const live = new Set<string>();
  const everAdded = new Set<string>();
  const txns = new Map<string, number>();
  for (const [i, name] of names.entries()) {
    const version = Number(name.slice(0, 20));
    if (version !== i) problems.push(`version ${version} where ${i} was expected`);
    const lines = (await fsp.readFile(path.join(log, name), 'utf8'))
      .split('\n')
      .filter((l) => l.trim() !== '');
    const actions = lines.map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);
    const info = actions[0]?.['commitInfo'];
    if (!info) problems.push(`${version}: commitInfo is not the first action`);
    else if (version > 0 && !(Number(info['readVersion']) < version))
      problems.push(
        `${version}: readVersion ${String(info['readVersion'])} is not below the version`,
      );
    const appIds = new Set<string>();
    for (const a of actions) {
      if (a['txn']) {
        const appId = String(a['txn']['appId']);
        const v = Number(a['txn']['version']);
        if (appIds.has(appId)) problems.push(`${version}: two txns for ${appId}`);
        appIds.add(appId);
        if ((txns.get(appId) ?? -1) >= v)
          problems.push(`${version}: txn ${appId} moved from ${txns.get(appId)} to ${v}`);
        txns.set(appId, v);
      }
      if (a['remove']) {
        const p = decodeURIComponent(String(a['remove']['path']));
        if (!live.has(p)) problems.push(`${version}: removes ${p}, which is not live`);
        live.delete(p);
      }
    }
    for (const a of actions) {
      if (!a['add']) continue;
      const p = decodeURIComponent(String(a['add']['path']));
      const dv = a['add']['deletionVector'] ? JSON.stringify(a['add']['deletionVector']) : '';
      if (live.has(p)) problems.push(`${version}: adds ${p}, which is live already`);
      if (!dv && everAdded.has(p)) problems.push(`${version}: adds ${p} a second time`);
      everAdded.add(p);
      live.add(p);
    }
  }
  for (const p of live) {
    await fsp
      .access(path.join(root, p))
      .catch(() => problems.push(`live file ${p} is missing on disk`));
  }
  return problems;
}
