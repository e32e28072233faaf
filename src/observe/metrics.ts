/**
 * A Prometheus metrics file per run, in the text exposition format, written with prom-client's
 * registry (for node_exporter's textfile collector, or any scraper of files). After each job the
 * file is replaced atomically (temp file + rename), so a scraper never reads half a file.
 *
 * The values are those of the last run of each job by this invocation: `tidemark_rows_total` is
 * the rows of that run (it starts again at each run, like a counter of a restarted process).
 * A path with `{job}` gets one file per job; without it, one file holds every job of the
 * invocation.
 */
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Counter, Gauge, Registry } from 'prom-client';
import type { JobConfig } from '../config/schema.js';
import { PartitionClock } from '../discovery/index.js';
import { PHASES } from '../job/phases.js';
import type { RunReport } from '../job/report.js';
import { makeFolder } from '../storage/make-folder.js';

/** The metrics of one file. */
class RunMetrics {
  readonly registry = new Registry();
  private readonly labels = ['job'] as const;
  readonly rows = new Counter({
    name: 'tidemark_rows_total',
    help: 'Rows of the last run, by kind (read, after_dedupe, inserted, updated, deleted, unchanged, skipped_stale)',
    labelNames: ['job', 'kind'],
    registers: [this.registry],
  });
  readonly files = new Counter({
    name: 'tidemark_files_total',
    help: 'Source files of the last run, by kind (discovered, loaded, quarantined)',
    labelNames: ['job', 'kind'],
    registers: [this.registry],
  });
  readonly bytes = new Counter({
    name: 'tidemark_bytes_total',
    help: 'Bytes of the source files the last run loaded',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly commits = new Counter({
    name: 'tidemark_commits_total',
    help: 'Delta commits made by the last run',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly duration = new Gauge({
    name: 'tidemark_run_duration_seconds',
    help: 'Duration of the last run',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly phases = new Gauge({
    name: 'tidemark_phase_duration_seconds',
    help: 'Time the last run spent per phase (list, fetch, load, dedupe, merge, commit)',
    labelNames: ['job', 'phase'],
    registers: [this.registry],
  });
  readonly success = new Gauge({
    name: 'tidemark_run_success',
    help: '1 when the last run succeeded (or found nothing new), 0 when it failed',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly finished = new Gauge({
    name: 'tidemark_run_finished_timestamp_seconds',
    help: 'When the last run ended (Unix time)',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly lag = new Gauge({
    name: 'tidemark_watermark_lag_seconds',
    help: 'How far the watermark is behind now: the end of the watermark partition, or the watermark timestamp',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly waiting = new Gauge({
    name: 'tidemark_partitions_waiting_for_marker',
    help: 'Partitions whose files wait for their _SUCCESS marker, by state (waiting, overdue: longer than discover.markerTimeout)',
    labelNames: ['job', 'state'],
    registers: [this.registry],
  });
  readonly backlogFiles = new Gauge({
    name: 'tidemark_backlog_files',
    help: 'Files discovered and not loaded when the last run ended (batches not committed, files waiting for their marker)',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly backlogBytes = new Gauge({
    name: 'tidemark_backlog_bytes',
    help: 'Bytes of those files',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly backlogAge = new Gauge({
    name: 'tidemark_backlog_oldest_age_seconds',
    help: 'Age of the oldest of those files (its LastModified to the end of the run); absent when there are none',
    labelNames: this.labels,
    registers: [this.registry],
  });
  readonly version = new Gauge({
    name: 'tidemark_table_version',
    help: 'Delta table version after the last run',
    labelNames: this.labels,
    registers: [this.registry],
  });
}

/** Seconds from the end of the watermark to `now`; null before the first load or for an unreadable watermark. */
export function watermarkLagSeconds(
  job: JobConfig,
  watermark: string | null,
  now: Date,
): number | null {
  if (watermark === null) return null;
  let end: number;
  if (job.source.discover.by === 'partition') {
    // The watermark partition is loaded up to its end: the start of the next partition.
    const clock = new PartitionClock(job.source.discover.timezone);
    const next = clock.startOf(clock.step(watermark, 1));
    if (next === null) return null;
    end = next.getTime();
  } else {
    end = Date.parse(watermark);
  }
  return Number.isFinite(end) ? Math.max(0, (now.getTime() - end) / 1000) : null;
}

/** Records each job's run and writes the file(s). */
export class MetricsFile {
  private readonly byPath = new Map<string, RunMetrics>();

  /** `path` may hold `{job}`: one file per job. */
  constructor(private readonly path: string) {}

  /** Record one job's run (`ok` false: it failed) and rewrite its file. */
  async record(job: JobConfig, report: RunReport, ok: boolean, now = new Date()): Promise<string> {
    const file = this.path.replaceAll('{job}', job.name);
    const m = this.byPath.get(file) ?? new RunMetrics();
    this.byPath.set(file, m);
    const l = { job: job.name };
    const rows: Record<string, number> = {
      read: report.rowsRead,
      after_dedupe: report.rowsAfterDedupe,
      inserted: report.inserted,
      updated: report.updated,
      deleted: report.deleted,
      unchanged: report.unchanged,
      skipped_stale: report.skippedStale,
    };
    for (const [kind, n] of Object.entries(rows)) setCounter(m.rows, { ...l, kind }, n);
    const files = {
      discovered: report.filesDiscovered,
      loaded: report.filesLoaded,
      quarantined: report.quarantined?.length ?? 0,
    };
    for (const [kind, n] of Object.entries(files)) setCounter(m.files, { ...l, kind }, n);
    setCounter(m.bytes, l, report.bytesLoaded ?? 0);
    setCounter(m.commits, l, report.commits);
    m.duration.set(l, report.durationMs / 1000);
    for (const phase of PHASES) m.phases.set({ ...l, phase }, (report.phases?.[phase] ?? 0) / 1000);
    m.success.set(l, ok ? 1 : 0);
    m.finished.set(l, now.getTime() / 1000);
    const lag = watermarkLagSeconds(job, report.watermark, now);
    if (lag === null) m.lag.remove(l);
    else m.lag.set(l, lag);
    const waiting = report.waitingForMarker ?? [];
    m.waiting.set({ ...l, state: 'waiting' }, waiting.length);
    m.waiting.set({ ...l, state: 'overdue' }, waiting.filter((w) => w.overdue).length);
    // Unknown when the run failed before planning: the series are left out rather than 0.
    const backlog = report.backlog;
    for (const [gauge, value] of [
      [m.backlogFiles, backlog?.files],
      [m.backlogBytes, backlog?.bytes],
      [m.backlogAge, backlog?.oldestAgeSeconds],
    ] as const) {
      if (value === undefined || value === null) gauge.remove(l);
      else gauge.set(l, value);
    }
    if (report.tableVersion === null) m.version.remove(l);
    else m.version.set(l, report.tableVersion);
    await writeAtomically(file, await m.registry.metrics());
    return file;
  }
}

/** A counter holding exactly `value` (the run's count). */
function setCounter<T extends string>(
  counter: Counter<T>,
  labels: Partial<Record<T, string>>,
  value: number,
): void {
  counter.remove(labels);
  counter.inc(labels, value);
}

/** Write `text` to `file` through a temp file in the same folder and a rename. */
async function writeAtomically(file: string, text: string): Promise<void> {
  await makeFolder(dirname(file));
  const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, text);
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
