/**
 * A job run with its side channels, both off by default: OpenLineage events (START before,
 * COMPLETE/FAIL/ABORT after; ./lineage-event.ts) and a Prometheus metrics file (./metrics.ts).
 * Neither can fail the run: a lineage endpoint that is down, or a metrics file that cannot be
 * written, is a warning in the log. Dry runs are not runs: they emit and record nothing.
 */
import path from 'node:path';
import type { JobConfig, TidemarkConfig } from '../config/schema.js';
import type { RunContext } from '../job/context.js';
import type { JobOutcome, RunReport } from '../job/report.js';
import { redactText } from '../log/redact.js';
import { endEvent, lineageRun, startEvent } from './lineage-event.js';
import { lineageSink, type LineageSink } from './lineage-sink.js';
import { MetricsFile } from './metrics.js';

/** What the observer needs from the CLI invocation. */
export interface ObserverOptions {
  config: TidemarkConfig;
  /** The config file: relative lineage and metrics paths are relative to its folder. */
  configPath: string;
  /** The invocation's id: the parent run of every job run in lineage. */
  runId: string;
  /** OpenLineage producer URI (tidemark and its version). */
  producer: string;
}

/** Runs jobs with lineage and metrics per the config; one per CLI invocation. */
export class RunObserver {
  private readonly metrics: MetricsFile | null;
  private sink: LineageSink | null = null;
  private readonly baseDir: string;

  constructor(private readonly opts: ObserverOptions) {
    this.baseDir = path.dirname(path.resolve(opts.configPath));
    const file = opts.config.metrics?.file;
    this.metrics = file ? new MetricsFile(path.resolve(this.baseDir, file)) : null;
  }

  /** Run `run(job, ctx)` with lineage events around it and its metrics recorded after it. */
  async run(
    job: JobConfig,
    ctx: RunContext,
    run: (job: JobConfig, ctx: RunContext) => Promise<JobOutcome<RunReport>>,
  ): Promise<JobOutcome<RunReport>> {
    const lineage = this.opts.config.lineage;
    if ((!lineage && !this.metrics) || ctx.dryRun) return run(job, ctx);
    const sink = lineage ? (this.sink ??= this.lineageSink(ctx)) : null;
    const ids = lineage
      ? lineageRun({
          invocationId: this.opts.runId,
          namespace: lineage.namespace,
          job: job.name,
          sourceUri: job.source.uri,
          targetUri: job.target.uri,
          producer: this.opts.producer,
        })
      : null;
    if (sink && ids) await sink.emit(startEvent(ids));
    const files: string[] = [];
    const outcome = await run(job, { ...ctx, onFilesCommitted: (keys) => files.push(...keys) });
    const r = outcome.report;
    if (sink && ids) {
      const error = outcome.ok ? undefined : errorOf(outcome.error);
      const aborted = !outcome.ok && (ctx.signal?.aborted ?? false);
      await sink.emit(
        endEvent(ids, {
          files,
          rowsWritten: r.inserted + r.updated + r.deleted,
          ...(error ? { error } : {}),
          aborted,
        }),
      );
      ctx.logger.debug({ job: job.name, lineageRunId: ids.runId }, 'lineage events sent');
    }
    if (this.metrics) {
      try {
        const file = await this.metrics.record(job, r, outcome.ok);
        ctx.logger.debug({ job: job.name, file }, 'metrics written');
      } catch (err) {
        ctx.logger.warn(
          { job: job.name, error: err instanceof Error ? err.message : String(err) },
          'metrics file not written (the run goes on)',
        );
      }
    }
    return outcome;
  }

  private lineageSink(ctx: RunContext): LineageSink {
    const l = this.opts.config.lineage!;
    return lineageSink(
      {
        ...(l.file ? { file: path.resolve(this.baseDir, l.file) } : {}),
        ...(l.url ? { url: l.url } : {}),
        timeoutMs: l.timeout,
      },
      ctx.logger,
    );
  }
}

/** The error as lineage shows it, secrets redacted (the endpoint is outside the process). */
function errorOf(err: unknown): { message: string; stack?: string } {
  if (err instanceof Error)
    return {
      message: redactText(err.message),
      ...(err.stack ? { stack: redactText(err.stack) } : {}),
    };
  return { message: redactText(String(err)) };
}
