/**
 * Target settings held against a table that already exists, before anything loads:
 *
 *   key, orderBy, deleteWhen   name columns the table has (merge mode): a missing key column
 *                              would be added NULL for every stored row and match nothing, a
 *                              missing orderBy would make every stored row the oldest version
 *   columnMapping              the table's mode: tidemark never changes it
 *   partitionBy, changeDataFeed  shape only a table the job creates: warnings, the table keeps its own
 *
 * The problems are config errors (exit 2). A run and a backfill check as soon as they read the
 * table; `validate` lists them.
 */
import { scd2Columns, type TargetMode } from '../config/schema.js';
import { type ColumnMappingMode } from '../delta/column-mapping.js';
import type { Snapshot } from '../delta/snapshot.js';
import { ConfigError } from '../errors.js';
import { checkDeleteExpression } from '../engine/merge/validate.js';
import { deleteWhenColumnProblems, type Problem } from './preflight.js';
import type { JobScope } from './scope.js';
import { TableConfig } from '../delta/table-config.js';

/** The settings of `target` that only a new table takes. */
export interface CreationSettings {
  columnMapping?: ColumnMappingMode | undefined;
  partitionBy?: readonly string[] | undefined;
  changeDataFeed?: boolean | undefined;
}

/** The columns a merge job's rows are matched and ordered by. */
export interface MatchColumns {
  mode?: TargetMode | undefined;
  key?: readonly string[] | undefined;
  orderBy?: string | undefined;
  /** scd2 mode: the history columns' names (defaults: valid_from, valid_to, is_current). */
  validFrom?: string | undefined;
  validTo?: string | undefined;
  isCurrent?: string | undefined;
}

/**
 * Key and orderBy columns the existing table lacks (merge mode; compared ignoring case, like Delta),
 * each naming the column and the table's columns (pure). `at` prefixes fields (`jobs[0].target`).
 */
export function missingColumnProblems(
  target: MatchColumns,
  snapshot: Snapshot,
  at: string,
): Problem[] {
  // A replace matches nothing stored: its key only dedupes the delivery (a column new to the table is added).
  if (target.mode === 'append' || target.mode === 'replace') return [];
  const columns = snapshot.schema.fields.map((f) => f.name);
  const known = new Set(columns.map((c) => c.toLowerCase()));
  const named: Array<{ field: string; role: string; column: string }> = [
    ...(target.key ?? []).map((column) => ({ field: `${at}.key`, role: 'key column', column })),
    ...(target.orderBy === undefined
      ? []
      : [{ field: `${at}.orderBy`, role: 'orderBy column', column: target.orderBy }]),
  ];
  const missing = named
    .filter((n) => !known.has(n.column.toLowerCase()))
    .map((n) => ({
      check: 'target' as const,
      field: n.field,
      message: `${n.field} names ${n.role} ${JSON.stringify(n.column)}, which the table does not have (its columns: ${columns.join(', ')}); a key and orderBy must be columns the table's rows hold`,
      kind: 'usage' as const,
    }));
  return [...missing, ...historyProblems(target, snapshot, at, known)];
}

/**
 * scd2 mode on a table that holds rows without the history columns (a merge or append table):
 * its rows are no versions, so a batch would add the columns NULL to every stored row (no current
 * version: a reader of `is_current` loses them) and update the keys it touches in place.
 */
function historyProblems(
  target: MatchColumns,
  snapshot: Snapshot,
  at: string,
  known: ReadonlySet<string>,
): Problem[] {
  if (target.mode !== 'scd2' || snapshot.files.length === 0) return [];
  const history = Object.values(scd2Columns(target));
  const lacking = history.filter((c) => !known.has(c.toLowerCase()));
  if (lacking.length === 0) return [];
  return [
    {
      check: 'target' as const,
      field: `${at}.mode`,
      message: `${at}.mode is scd2, but the table holds rows without the history column${lacking.length === 1 ? '' : 's'} ${lacking.join(', ')} (a merge or append table): its rows are no versions, and a batch would add ${lacking.length === 1 ? 'it' : 'them'} NULL to every stored row. Keep the table's mode, or load the history into a new target (a backfill fills it)`,
      kind: 'usage' as const,
    },
  ];
}

/** Problems and warnings of `target`'s creation settings against the existing table (pure). `at` prefixes fields (`jobs[0].target`). */
export function tableSettingFindings(
  target: CreationSettings,
  snapshot: Snapshot,
  at: string,
): { problems: Problem[]; warnings: Problem[] } {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
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
    const has =
      snapshot.partitionColumns.length > 0
        ? `is partitioned by ${snapshot.partitionColumns.join(', ')}`
        : 'is not partitioned';
    warnings.push({
      check: 'target',
      field: `${at}.partitionBy`,
      message: `${at}.partitionBy is ${partitionBy.join(', ')}, but the table ${has}: the setting applies to tables the job creates, and this table keeps its own`,
      kind: 'usage',
    });
  }
  if (
    target.changeDataFeed === true &&
    !TableConfig.of(snapshot.protocol, snapshot.metadata).changeDataFeedRequested
  ) {
    warnings.push({
      check: 'target',
      field: `${at}.changeDataFeed`,
      message: `${at}.changeDataFeed applies to tables the job creates; this table does not record a change data feed (set delta.enableChangeDataFeed on it to start one)`,
      kind: 'usage',
    });
  }
  return { problems, warnings };
}

/** `source.columns` against the table: a declared column the table has must have the declared type (tidemark never changes a column's type). */
export function declaredTypeProblems(
  columns: Readonly<Record<string, string>>,
  snapshot: Snapshot,
  at: string,
): Problem[] {
  return Object.entries(columns).flatMap(([name, type]) => {
    const field = snapshot.schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
    if (!field || typeof field.type !== 'string' || field.type.replace(/\s+/g, '') === type)
      return [];
    return [
      {
        check: 'target' as const,
        field: `${at}.columns.${name}`,
        message: `${at}.columns.${name} is ${type}, but the table's column ${JSON.stringify(field.name)} is ${field.type}: tidemark never changes a column's type (declare it ${field.type}, or remove it)`,
        kind: 'usage' as const,
      },
    ];
  });
}

/**
 * At the start of a run or backfill: a key, orderBy or deleteWhen column the table lacks, or a
 * contradicting column mapping, fails now (exit 2), before anything loads; the rest is logged.
 * A deleteWhen that does not parse fails now too, table or not (its MergeInputError, exit 2).
 */
export async function checkTableSettings(
  scope: JobScope,
  snapshot: Snapshot | null,
): Promise<void> {
  const { target } = scope.job;
  if (target.deleteWhen !== undefined)
    await checkDeleteExpression(scope.session, target.deleteWhen);
  if (!snapshot) return;
  const columns = snapshot.schema.fields.map((f) => f.name);
  const deleteWhen =
    target.deleteWhen === undefined
      ? []
      : await deleteWhenColumnProblems(
          scope.session,
          target.deleteWhen,
          columns,
          'target.deleteWhen',
        );
  const found = tableSettingFindings(target, snapshot, 'target');
  const problems = [
    ...missingColumnProblems(target, snapshot, 'target'),
    ...deleteWhen,
    ...found.problems,
    ...declaredTypeProblems(scope.job.source.columns ?? {}, snapshot, 'source'),
  ];
  const first = problems[0];
  if (first) {
    const column = first.field === 'target.columnMapping' ? {} : { columns };
    throw new ConfigError(
      `[preflight] job ${scope.job.name}: table ${scope.table.uri}: ${first.message}`,
      { field: first.field ?? 'target', uri: scope.table.uri, ...column },
    );
  }
  for (const w of found.warnings)
    scope.ctx.logger.warn(
      { job: scope.job.name, table: scope.table.uri, field: w.field },
      w.message,
    );
}
