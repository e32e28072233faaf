/**
 * Target settings that shape only the table a job creates (`columnMapping`, `partitionBy`,
 * `changeDataFeed`), held against a table that already exists. Column mapping is a problem:
 * tidemark never changes a table's mode, so a run would fail once its batch is loaded. The others
 * are warnings: the table keeps its own partitioning and change-feed setting, and the config
 * setting is ignored. A run and a backfill check as soon as they read the table; `validate` lists them.
 */
import { changeDataFeedEnabled } from '../delta/change-data.js';
import { columnMappingMode, type ColumnMappingMode } from '../delta/column-mapping.js';
import type { Snapshot } from '../delta/snapshot.js';
import { ConfigError } from '../errors.js';
import type { Problem } from './preflight.js';
import type { JobScope } from './scope.js';

/** The settings of `target` that only a new table takes. */
export interface CreationSettings {
  columnMapping?: ColumnMappingMode | undefined;
  partitionBy?: readonly string[] | undefined;
  changeDataFeed?: boolean | undefined;
}

/** Problems and warnings of `target`'s creation settings against the existing table (pure). `at` prefixes fields (`jobs[0].target`). */
export function tableSettingFindings(target: CreationSettings, snapshot: Snapshot, at: string): { problems: Problem[]; warnings: Problem[] } {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const mode = columnMappingMode(snapshot.protocol, snapshot.metadata);
  if (target.columnMapping !== undefined && target.columnMapping !== mode) {
    problems.push({
      check: 'target',
      field: `${at}.columnMapping`,
      message: `${at}.columnMapping is '${target.columnMapping}', but the table has column mapping mode '${mode}': tidemark never changes a table's mode (remove the setting or make it '${mode}')`,
      kind: 'usage',
    });
  }
  const partitionBy = target.partitionBy ?? [];
  if (partitionBy.length > 0 && partitionBy.join('\0') !== snapshot.partitionColumns.join('\0')) {
    const has = snapshot.partitionColumns.length > 0 ? `is partitioned by ${snapshot.partitionColumns.join(', ')}` : 'is not partitioned';
    warnings.push({
      check: 'target',
      field: `${at}.partitionBy`,
      message: `${at}.partitionBy is ${partitionBy.join(', ')}, but the table ${has}: the setting applies to tables the job creates, and this table keeps its own`,
      kind: 'usage',
    });
  }
  if (target.changeDataFeed === true && !changeDataFeedEnabled(snapshot.metadata)) {
    warnings.push({
      check: 'target',
      field: `${at}.changeDataFeed`,
      message: `${at}.changeDataFeed applies to tables the job creates; this table does not record a change data feed (set delta.enableChangeDataFeed on it to start one)`,
      kind: 'usage',
    });
  }
  return { problems, warnings };
}

/** At the start of a run or backfill: a contradicting column mapping fails now (exit 2), before anything loads; the rest is logged. */
export function checkTableSettings(scope: JobScope, snapshot: Snapshot | null): void {
  if (!snapshot) return;
  const { problems, warnings } = tableSettingFindings(scope.job.target, snapshot, 'target');
  const first = problems[0];
  if (first) throw new ConfigError(`[preflight] job ${scope.job.name}: table ${scope.table.uri}: ${first.message}`, { field: first.field ?? 'target', uri: scope.table.uri });
  for (const w of warnings) scope.ctx.logger.warn({ job: scope.job.name, table: scope.table.uri, field: w.field }, w.message);
}
