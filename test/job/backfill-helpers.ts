/**
 * Helpers for the backfill and reset tests: run them with a silent logger, and read a local
 * table's commits back from its `_delta_log` (what each version wrote: operation, txn appIds,
 * domains, adds and removes), the way a user inspecting the log would.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import {
  runBackfill,
  type BackfillOptions,
  type BackfillReport,
} from '../../src/job/backfill/run.js';
import type { BackfillState } from '../../src/job/backfill/state.js';
import type { RunContext } from '../../src/job/context.js';
import { resetJob, type ResetOptions, type ResetReport } from '../../src/job/reset.js';
import type { JobOutcome } from '../../src/job/report.js';
import { silentLogger } from '../../src/log/logger.js';
import { unwrap } from './helpers.js';

type Setup = { job: JobConfig; storage: StorageConfig };

/** Backfill with a silent logger and no progress bars; its outcome (never throws). */
export function backfillOutcome(
  setup: Setup,
  opts: BackfillOptions,
  extra: Partial<RunContext> = {},
): Promise<JobOutcome<BackfillReport>> {
  return runBackfill(
    setup.job,
    { storage: setup.storage, logger: silentLogger(), tty: false, ...extra },
    opts,
  );
}

/** Backfill; its report, or the backfill's error thrown. */
export async function backfill(
  setup: Setup,
  opts: BackfillOptions,
  extra: Partial<RunContext> = {},
): Promise<BackfillReport> {
  return unwrap(await backfillOutcome(setup, opts, extra));
}

/** Reset with a silent logger; its report, or the reset's error thrown. */
export async function reset(
  setup: Setup,
  opts: ResetOptions,
  extra: Partial<RunContext> = {},
): Promise<ResetReport> {
  return unwrap(
    await resetJob(
      setup.job,
      { storage: setup.storage, logger: silentLogger(), tty: false, ...extra },
      opts,
    ),
  );
}

/** What one commit of the log holds. */
export interface CommitView {
  version: number;
  operation: string;
  operationParameters: Record<string, unknown>;
  /** txn appId → version. */
  txns: Map<string, number>;
  /** domain → parsed configuration. */
  domains: Map<string, unknown>;
  adds: string[];
  removes: string[];
}

/** Every commit of the local table at `dir`, in version order. */
export async function commitsOf(dir: string): Promise<CommitView[]> {
  const log = path.join(dir, '_delta_log');
  const names = (await fsp.readdir(log)).filter((n) => /^\d{20}\.json$/.test(n)).sort();
  const out: CommitView[] = [];
  for (const name of names) {
    const view: CommitView = {
      version: Number(name.slice(0, 20)),
      operation: '',
      operationParameters: {},
      txns: new Map(),
      domains: new Map(),
      adds: [],
      removes: [],
    };
    for (const line of (await fsp.readFile(path.join(log, name), 'utf8')).split('\n')) {
      if (line.trim() === '') continue;
      const a = JSON.parse(line) as Record<string, Record<string, unknown>>;
      if (a['commitInfo']) {
        view.operation = String(a['commitInfo']['operation']);
        view.operationParameters = (a['commitInfo']['operationParameters'] ?? {}) as Record<
          string,
          unknown
        >;
      }
      if (a['txn']) view.txns.set(String(a['txn']['appId']), Number(a['txn']['version']));
      if (a['domainMetadata'])
        view.domains.set(
          String(a['domainMetadata']['domain']),
          JSON.parse(String(a['domainMetadata']['configuration'])),
        );
      if (a['add']) view.adds.push(String(a['add']['path']));
      if (a['remove']) view.removes.push(String(a['remove']['path']));
    }
    out.push(view);
  }
  return out;
}

/** The backfill state a commit wrote for `job`, if any. */
export function backfillStateIn(commit: CommitView, job: string): BackfillState | undefined {
  return commit.domains.get(`tidemark.backfill.${job}`) as BackfillState | undefined;
}
