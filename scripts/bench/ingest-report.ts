/**
 * The ingest benchmark's printed tables: the three figures against their targets, where the
 * job's time goes (a traced real run), and what each run loaded.
 */
import type {
  ChecksumResult,
  IncrementalResult,
  IngestBenchOptions,
  InitialResult,
  NoopResult,
} from './ingest.js';
import type { Samples } from './clock.js';
import { PHASES } from '../../src/job/phases.js';
import type { JobProfile } from './job.js';
import type { LandingSpec } from './landing.js';
import { count, mib, pct, secs, sqlTable, times, verdict, type TextTable } from './report.js';

/** The ingest targets (docs/benchmarks.md). */
export const INGEST_TARGETS = {
  initialRatio: 1.5,
  incrementalRatio: 0.05,
  noopMs: 1000,
  checksumCost: 0.1,
} as const;
const TARGETS = INGEST_TARGETS;

/** Everything the tables show. */
export interface IngestFigures {
  opts: IngestBenchOptions;
  spec: LandingSpec;
  initial: InitialResult;
  incremental: IncrementalResult;
  noop: NoopResult;
  checksums: ChecksumResult;
}

/** The summary, phase and detail tables, then the slowest statements of the profiled runs. */
export function ingestTables(f: IngestFigures): TextTable[] {
  const w = f.incremental.whatIf;
  return [
    summaryTable(f),
    phaseTable(f),
    detailTable(f),
    checksumTable(f.checksums),
    sqlTable('Slowest SQL, (a) initial load (traced run)', f.initial.profile.sql.slice(0, 8)),
    sqlTable('Slowest SQL, (b) incremental (traced run)', f.incremental.profile.sql.slice(0, 6)),
    ...(w
      ? [
          sqlTable(
            `Slowest SQL, (b) what-if with files of ${count(w.targetFileRows)} rows (replica)`,
            w.profile.sql.slice(0, 6),
          ),
        ]
      : []),
  ];
}

function summaryTable(f: IngestFigures): TextTable {
  const { initial: a, incremental: b, noop: c } = f;
  const landing = `${count(f.spec.files)} files, ${count(a.landingRows)} rows`;
  const reps =
    f.opts.repeat > 1
      ? `; times: median (min–max) of ${f.opts.repeat} interleaved runs, (c) of ${c.runs.ms.length}`
      : '';
  return {
    title: `tidemark ingest — landing zone: ${landing}, ${pct(f.spec.dupShare)} repeated keys, ${f.spec.filesPerDay} files/day${reps}`,
    header: [
      'run',
      'tidemark',
      'baseline',
      'baseline time',
      'ratio',
      'target',
      '',
      'CPU ratio',
      'check',
    ],
    rows: [
      [
        '(a) initial load',
        spread(a.tidemark),
        'hand-written DuckDB COPY',
        spread(a.handwritten),
        times(a.ratio),
        `≤ ${times(TARGETS.initialRatio)}`,
        verdict(a.ratio <= TARGETS.initialRatio),
        times(a.cpuRatio),
        ok(a.verified),
      ],
      [
        `(b) incremental, ${b.newFiles} new files`,
        spread(b.incremental),
        `full reload (${f.spec.files + b.newFiles} files)`,
        spread(b.fullReload),
        pct(b.ratio),
        `≤ ${pct(TARGETS.incrementalRatio)}`,
        verdict(b.ratio <= TARGETS.incrementalRatio),
        pct(b.cpuRatio),
        ok(b.verified),
      ],
      floorRow(f),
      ...whatIfRow(f),
      [
        `(c) nothing new, ${c.commits} commits`,
        spread(c.runs),
        '-',
        '-',
        '-',
        `< ${secs(TARGETS.noopMs)}`,
        verdict(c.runs.median < TARGETS.noopMs),
        '-',
        ok(c.verified),
      ],
      checksumRow(f.checksums),
    ],
  };
}

/** (b)'s reference: the same copy-on-write work by hand, with no Delta log, stats or checks. */
function floorRow(f: IngestFigures): string[] {
  const { floor, fullReload } = f.incremental;
  const name = `(b) floor: hand-written copy-on-write`;
  return [
    name,
    spread(floor.runs),
    'same full reload',
    spread(fullReload),
    pct(floor.ratio),
    'reference',
    '',
    '-',
    ok(floor.verified),
  ];
}

/** (b) again, had the loads written files of N rows (so an update rewrites one small file). */
function whatIfRow(f: IngestFigures): string[][] {
  const w = f.incremental.whatIf;
  if (!w) return [];
  const name = `(b) what-if: ${count(w.tableFiles)} files of ≤ ${count(w.targetFileRows)} rows`;
  return [
    [
      name,
      spread(w.incremental),
      'same full reload',
      spread(f.incremental.fullReload),
      pct(w.ratio),
      'reference',
      '',
      '-',
      'replica',
    ],
  ];
}

/** (d): the load with checks against the same load without; the ratio column is what they cost. */
function checksumRow(d: ChecksumResult): string[] {
  const cost = `${signed(d.cost)} (${times(1 + d.cost)})`;
  return [
    '(d) checksums: (a) from and to S3',
    spread(d.on),
    'the same without checks',
    spread(d.off),
    cost,
    `< +${pct(TARGETS.checksumCost)}`,
    verdict(d.cost < TARGETS.checksumCost),
    signed(d.cpuCost),
    ok(d.verified),
  ];
}

function signed(share: number): string {
  return `${share >= 0 ? '+' : ''}${pct(share)}`;
}

/** What the loads of (d) checked, from their run reports. */
function checksumTable(d: ChecksumResult): TextTable {
  const kinds = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, n]) => `${k} ${count(n)}`)
      .join(', ') || '-';
  return {
    title: '(d) what the loads checked (run reports, last load of each)',
    header: ['load', 'whole-object reads checked', "uploads checked against the store's answer"],
    rows: [
      ['with checks', kinds(d.checked.reads), kinds(d.checked.uploads)],
      ['without', kinds(d.unchecked.reads), kinds(d.unchecked.uploads)],
    ],
  };
}

/** "median (min–max)" when repeated. */
function spread(s: Samples): string {
  return s.ms.length === 1
    ? secs(s.median)
    : `${secs(s.median)} (${(s.min / 1000).toFixed(2)}–${(s.max / 1000).toFixed(2)})`;
}

function phaseTable(f: IngestFigures): TextTable {
  const row = (name: string, p: JobProfile, realMs: number) => [
    name,
    ...PHASES.map((s) => secs(p.phases[s])),
    secs(p.totalMs),
    secs(realMs),
  ];
  return {
    title:
      "Where the job spends its time (the run report's phase timings of one more run, statements traced)",
    header: ['run', ...PHASES, 'profiled run', 'measured (median)'],
    rows: [
      row('(a) initial load', f.initial.profile, f.initial.tidemark.median),
      row('(b) incremental', f.incremental.profile, f.incremental.incremental.median),
      ...(f.incremental.whatIf
        ? [
            row(
              '(b) what-if',
              f.incremental.whatIf.profile,
              f.incremental.whatIf.incremental.median,
            ),
          ]
        : []),
    ],
  };
}

function detailTable(f: IngestFigures): TextTable {
  const { initial: a, incremental: b, noop: c } = f;
  const r = (name: string, x: InitialResult['report'], t: InitialResult['table']) => [
    name,
    count(x.filesLoaded),
    count(x.rowsRead),
    count(x.rowsAfterDedupe),
    count(x.inserted),
    count(x.updated),
    count(x.commits),
    String(t.version),
    count(t.files),
    mib(t.bytes),
    count(t.rows),
  ];
  return {
    title: `Runs (last of each; c: table of ${c.commits} commits built in ${secs(c.buildMs)}, version ${c.tableVersion}; no-op runs: ${c.runs.ms.map(secs).join(', ')})`,
    header: [
      'run',
      'files',
      'rows read',
      'after dedupe',
      'inserted',
      'updated',
      'commits',
      'version',
      'table files',
      'table size',
      'table rows',
    ],
    rows: [r('(a) initial load', a.report, a.table), r('(b) incremental', b.report, b.table)],
  };
}

function ok(verified: boolean): string {
  return verified ? 'ok' : 'FAILED';
}
