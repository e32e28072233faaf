/**
 * Row tracking (PROTOCOL.md "Row Tracking"; docs/delta-protocol.md, Row tracking), the commit's part.
 *
 * While `rowTracking` is a writer feature (and not suspended), every add a commit makes without a
 * `baseRowId` gets fresh row ids: `baseRowId` = high-water mark + 1, and the mark moves up by the
 * file's physical row count (`stats.numRecords`). Every add without `defaultRowCommitVersion`
 * gets the commit's version. A `delta.rowTracking` domain records the new mark. Both depend on the
 * version the commit lands at, so the commit loop assigns them per attempt, counting from the
 * winners' mark after a lost race.
 *
 * Preserving ids (the materialized hidden columns) is the writers' part: the MERGE and OPTIMIZE
 * write each moved row's stable id and version into them (see engine/row-ids.ts). What the table
 * asks of its writers is `TableConfig.rowTracking` (./table-config.ts).
 */
import { DeltaLogError } from '../errors.js';
import type { Action, AddFile, DomainMetadata, Metadata } from './actions.js';
import { parseStats } from './stats.js';
import {
  ENABLE_ROW_TRACKING,
  MATERIALIZED_ROW_ID_COLUMN,
  MATERIALIZED_ROW_VERSION_COLUMN,
  ROW_TRACKING_SUSPENDED,
  isTrue,
} from './table-properties.js';

/** The system domain holding the row-id high-water mark. */
export const ROW_TRACKING_DOMAIN = 'delta.rowTracking';
/** The commitInfo tag saying whether every updated or copied row kept its stable id and version. */
export const PRESERVED_TAG = 'delta.rowTracking.preserved';

/** The high-water mark of a table that never assigned a row id. */
const NO_ROW_IDS = -1;

/** Why a table's row-tracking settings cannot be honoured, or null when they can (for ./features.ts). */
export function rowTrackingProblem(
  writerFeatures: readonly string[],
  metadata: Metadata,
): string | null {
  const config = metadata.configuration ?? {};
  if (!writerFeatures.includes('domainMetadata'))
    return 'rowTracking is listed without the domainMetadata feature it requires';
  if (!isTrue(config, ENABLE_ROW_TRACKING)) return null;
  if (isTrue(config, ROW_TRACKING_SUSPENDED))
    return `${ENABLE_ROW_TRACKING} and ${ROW_TRACKING_SUSPENDED} are both true`;
  if (!config[MATERIALIZED_ROW_ID_COLUMN] || !config[MATERIALIZED_ROW_VERSION_COLUMN]) {
    return `${ENABLE_ROW_TRACKING} is true but ${MATERIALIZED_ROW_ID_COLUMN} or ${MATERIALIZED_ROW_VERSION_COLUMN} is not set`;
  }
  return null;
}

/** The high-water mark the live `delta.rowTracking` domain records, or -1 when there is none. */
export function highWaterMarkOf(domains: ReadonlyMap<string, DomainMetadata>): number {
  const domain = domains.get(ROW_TRACKING_DOMAIN);
  return domain ? parseHighWaterMark(domain) : NO_ROW_IDS;
}

/** The highest mark a commit's `delta.rowTracking` domain action records (a winner's), else `current`. */
export function highWaterMarkAfter(actions: readonly Action[], current: number): number {
  let mark = current;
  for (const a of actions) {
    if (
      'domainMetadata' in a &&
      a.domainMetadata.domain === ROW_TRACKING_DOMAIN &&
      !a.domainMetadata.removed
    ) {
      mark = Math.max(mark, parseHighWaterMark(a.domainMetadata));
    }
  }
  return mark;
}

/** `rowIdHighWaterMark` of the domain's JSON configuration; other keys (Databricks' `domainName`) are ignored. */
function parseHighWaterMark(domain: DomainMetadata): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(domain.configuration);
  } catch (cause) {
    throw new DeltaLogError(
      `[delta] the ${ROW_TRACKING_DOMAIN} domain is not JSON: ${domain.configuration}`,
      { cause },
    );
  }
  const mark = (parsed as { rowIdHighWaterMark?: unknown } | null)?.rowIdHighWaterMark;
  if (typeof mark !== 'number' || !Number.isSafeInteger(mark)) {
    throw new DeltaLogError(
      `[delta] the ${ROW_TRACKING_DOMAIN} domain has no integer rowIdHighWaterMark: ${domain.configuration}`,
    );
  }
  return mark;
}

/** A commit's actions with row tracking fields assigned, and the mark after them. */
export interface AssignedRowIds {
  actions: Action[];
  highWaterMark: number;
}

/**
 * Give every add without them a fresh `baseRowId` (counting up from `highWaterMark`) and the
 * commit's `version` as `defaultRowCommitVersion`, in commit order; add the `delta.rowTracking`
 * domain when the mark moved. Adds that carry the fields (a file re-added with a deletion vector)
 * keep them. Pure; throws DeltaLogError for an add without a row count.
 */
export function assignRowIds(
  actions: readonly Action[],
  opts: { version: number; highWaterMark: number; uri: string },
): AssignedRowIds {
  let mark = opts.highWaterMark;
  const assigned = actions.map((a): Action => {
    if (!('add' in a)) return a;
    const add: AddFile = { ...a.add };
    if (add.baseRowId === undefined || add.baseRowId === null) {
      add.baseRowId = mark + 1;
      mark += physicalRows(add, opts.uri, opts.version);
    }
    if (add.defaultRowCommitVersion === undefined || add.defaultRowCommitVersion === null)
      add.defaultRowCommitVersion = opts.version;
    return { add };
  });
  if (mark > opts.highWaterMark) assigned.push({ domainMetadata: highWaterMarkDomain(mark) });
  return { actions: assigned, highWaterMark: mark };
}

/** The `delta.rowTracking` domain recording `mark`: a single key, as the protocol asks. */
export function highWaterMarkDomain(mark: number): DomainMetadata {
  return {
    domain: ROW_TRACKING_DOMAIN,
    configuration: JSON.stringify({ rowIdHighWaterMark: mark }),
    removed: false,
  };
}

/** Rows stored in an add's file (deleted ones included): fresh ids cover every physical row. */
function physicalRows(add: AddFile, uri: string, version: number): number {
  const rows = parseStats(add.stats)?.numRecords;
  if (rows === undefined) {
    throw new DeltaLogError(
      `[delta] cannot assign row ids in commit ${version} to ${uri}: the add of ${add.path} has no numRecords in its stats`,
      {
        context: { uri, version, key: add.path },
      },
    );
  }
  return rows;
}
