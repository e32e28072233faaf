/**
 * The MERGE benchmark's printed tables: times and bytes against the targets, the phases of the
 * MERGE and of the full rewrite, and what the MERGE did.
 */
import type { Samples } from './clock.js';
import {
  MERGE_TARGETS,
  bytesWritten,
  isVerified,
  timeTarget,
  type BaseTable,
  type MergeBenchOptions,
  type VariantResult,
} from './merge.js';
import type { PeakRss } from './peak-rss.js';
import { count, mib, pct, secs, sqlTable, verdict, type TextTable } from './report.js';

/** The summary, phase and outcome tables, then the slowest statements of each MERGE. */
export function mergeTables(
  opts: MergeBenchOptions,
  base: BaseTable,
  variants: readonly VariantResult[],
): TextTable[] {
  return [
    summaryTable(opts, base, variants),
    phaseTable(variants),
    outcomeTable(variants),
    ...variants.map((v) =>
      sqlTable(
        `Slowest SQL of the last MERGE, ${v.spread} (full rewrite's in the JSON result)`,
        v.sql.merge.slice(0, 6),
      ),
    ),
  ];
}

/** "median (min–max)" when repeated. */
function spread(s: Samples): string {
  return s.ms.length === 1
    ? secs(s.median)
    : `${secs(s.median)} (${(s.min / 1000).toFixed(2)}–${(s.max / 1000).toFixed(2)})`;
}

function summaryTable(
  opts: MergeBenchOptions,
  base: BaseTable,
  variants: readonly VariantResult[],
): TextTable {
  const fp = base.fingerprint;
  const reps =
    opts.repeat > 1 ? `; times: median (min–max) of ${opts.repeat} interleaved runs` : '';
  return {
    title:
      `MERGE of ${count(opts.changes)} changed rows vs full rewrite — table: ${count(fp.rows)} rows, ${fp.files} files, ${mib(fp.bytes)}; ` +
      `deletion vectors: ${opts.deletionVectors}${opts.partitionBy.length > 0 ? `; partitioned by ${opts.partitionBy.join(', ')}` : ''}${reps}`,
    header: [
      'changes',
      'MERGE',
      'full rewrite',
      'MERGE/rewrite',
      'target',
      '',
      'CPU ratio',
      'written',
      '% of bytes',
      'target',
      '',
      'peak RSS',
      'target',
      '',
      'rewrite RSS',
      'lean COPY',
      'MERGE/lean',
      'check',
    ],
    rows: variants.map((v) => {
      const time = timeTarget(v.spread, fp.rows);
      const bytes = MERGE_TARGETS[v.spread].bytesRatio;
      const atScale = fp.rows >= MERGE_TARGETS.scatteredAtScale.rows;
      return [
        `${v.spread} (${count(v.batch.updates)} upd + ${count(v.batch.inserts)} ins)`,
        spread(v.merge),
        spread(v.rewrite),
        pct(v.timeRatio),
        `≤ ${pct(time)}`,
        verdict(v.timeRatio <= time),
        pct(v.cpuRatio),
        mib(bytesWritten(v.lastMerge)),
        pct(v.bytesRatio),
        `≤ ${pct(bytes)}`,
        verdict(v.bytesRatio <= bytes),
        rss(v.peakRss.merge),
        atScale ? `≤ ${gib(MERGE_TARGETS.peakRssBytes)}` : '-',
        atScale ? verdict(v.peakRss.merge.bytes <= MERGE_TARGETS.peakRssBytes) : '',
        rss(v.peakRss.rewrite),
        v.lean ? spread(v.lean) : '-',
        v.lean ? pct(v.merge.median / v.lean.median) : '-',
        isVerified(v) ? 'ok' : 'FAILED',
      ];
    }),
  };
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

/** A peak RSS; `~` marks a lifetime peak where the platform cannot measure one step. */
function rss(p: PeakRss): string {
  return `${p.perStep ? '' : '~'}${gib(p.bytes)}`;
}

function phaseTable(variants: readonly VariantResult[]): TextTable {
  const phases = ['prepare', 'prune', 'classify', 'write', 'commit'] as const;
  const rw = ['snapshot', 'rewrite', 'upload', 'commit'] as const;
  return {
    title:
      'Phases of the last run (MERGE: its staged durations and the commit; full rewrite: snapshot, read+upsert+sort+write, upload, commit)',
    header: [
      'changes',
      ...phases.map((p) => `MERGE ${p}`),
      'MERGE total',
      ...rw.map((p) => `rewrite ${p}`),
    ],
    rows: variants.map((v) => [
      v.spread,
      ...phases.map((p) => secs(v.lastMerge.durations[p])),
      secs(v.lastMerge.durations.total),
      ...rw.map((p) => secs(v.lastRewrite.phases[p] ?? 0)),
    ]),
  };
}

function outcomeTable(variants: readonly VariantResult[]): TextTable {
  return {
    title: 'MERGE outcome (last run) and checks',
    header: [
      'changes',
      'inserted',
      'updated',
      'stale',
      'scanned',
      'read',
      'removed',
      'rewritten',
      'added',
      'new DVs',
      'DV bytes',
      'rows copied',
      'rows after',
      'expected',
      '= rewrite',
      'samples',
    ],
    rows: variants.map((v) => {
      const m = v.lastMerge;
      return [
        v.spread,
        count(m.inserted),
        count(m.updated),
        count(m.skippedStale),
        count(m.filesScanned),
        count(m.filesRead),
        count(m.filesRemoved),
        mib(m.bytesRewritten),
        count(m.filesAdded),
        count(m.filesWithNewDv),
        count(m.dvBytes),
        count(m.rowsCopied),
        count(v.verified.mergeRows),
        count(v.verified.rowsExpected),
        v.verified.fingerprintsEqual ? 'yes' : 'NO',
        v.verified.sampledMismatches === 0 ? '20 ok' : `${v.verified.sampledMismatches} differ`,
      ];
    }),
  };
}
