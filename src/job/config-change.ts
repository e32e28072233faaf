/**
 * The job remembers what it was configured with: every commit of its state records the settings
 * that decide what a run loads and how (`configuredAs`: source, discovery, mode, key, orderBy,
 * scd2's trackColumns, partitionBy). A run, and `validate`, compares them with the config and says what changed and
 * what it does about it:
 *
 *   settle, lookback   a wider window reaches back only to what the state remembers (no file
 *                      loads twice); a narrower one looks at fewer late files
 *   source, filters    the watermark carries over; files behind it are not loaded (backfill them)
 *   layout, timezone   the watermark carries over (another granularity or `discover.by` is
 *                      refused by discovery until a reset)
 *   mode, key          append -> merge, or a key a stored row may share with another (not a
 *                      superset of the old key), is refused while the table holds more than one
 *                      row per new key, naming a few
 *   key, orderBy       tombstones of a wider key are re-keyed; others are refused until
 *                      `--accept-config-change` or a reset drops them (./tombstones/plan.ts);
 *                      in scd2 mode always refused: the stored history is keyed and its
 *                      versions' valid_from and valid_to are ordered by them
 *   trackColumns       scd2: always refused (a rebuilt history would merge the stored versions
 *                      that differ only in columns no longer tracked)
 *   scd2 -> merge      refused while the history holds more than one row per key (it does once a
 *                      key has two versions), naming a few
 *   partitionBy        recorded; held against the table's own partitioning (./table-settings.ts)
 *
 * Refusals are ConfigErrors (exit 2) naming the field; the rest is logged as warnings and listed
 * under `configChanges` in the run report.
 */
import type { JobConfig, TargetMode } from '../config/schema.js';
import { durationText } from '../config/units.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DiscoveryState } from '../discovery/index.js';
import type { DuckSession } from '../engine/duckdb.js';
import { duplicateKeys, type DuplicateKeys } from '../engine/table-queries.js';
import { ConfigError } from '../errors.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import {
  liveTombstoneFiles,
  tombstoneFit,
  unfitTombstones,
  type TombstoneState,
} from './tombstones/plan.js';
import { describeWatermark } from './watermark.js';

/** The settings a job's state records (absent in states written before it: nothing to compare). */
export interface ConfiguredAs {
  source: { uri: string; include?: string[]; exclude?: string[] };
  discover:
    | { by: 'partition'; layout: string; lookback: number; timezone: string }
    | { by: 'modified'; settleMs: number }
    | { by: 'notifications'; queue: string };
  target: {
    mode: TargetMode;
    key?: string[];
    orderBy?: string;
    /** scd2 mode (absent in older states): the columns whose change opens a version, as configured (the default: `{ except: [] }`). */
    trackColumns?: string[] | { except: string[] };
    partitionBy: string[];
  };
}

/** One setting that differs from what the state recorded, and what tidemark does about it. */
export interface ConfigChange {
  field: string;
  from: string;
  to: string;
  effect: string;
}

/** The settings of `job` as its state records them. */
export function configuredAs(job: JobConfig): ConfiguredAs {
  const { source, target } = job;
  const d = source.discover;
  return {
    source: {
      uri: source.uri,
      ...(source.include ? { include: source.include } : {}),
      ...(source.exclude ? { exclude: source.exclude } : {}),
    },
    discover:
      d.by === 'partition'
        ? { by: 'partition', layout: d.layout, lookback: d.lookback, timezone: d.timezone }
        : d.by === 'modified'
          ? { by: 'modified', settleMs: d.settle }
          : { by: 'notifications', queue: d.queue },
    target: {
      mode: target.mode,
      ...(target.mode !== 'append' && target.key
        ? { key: target.key, orderBy: target.orderBy! }
        : {}),
      ...(target.mode === 'scd2' ? { trackColumns: target.trackColumns ?? { except: [] } } : {}),
      partitionBy: target.partitionBy,
    },
  };
}

/** What the table needs for the checks that read it. */
export interface TableAccess {
  session: DuckSession;
  storage: Storage;
  spool: Spool;
}

/** Tombstone states of the table's owners that a MERGE of the job reads: the job's own and its backfills'. */
export type TombstoneOwners = ReadonlyArray<{ folder: string; state: TombstoneState | undefined }>;

/** What changed and what is refused. */
export interface ConfigChangeFindings {
  changes: ConfigChange[];
  refusals: ConfigError[];
}

/**
 * The changes between the recorded settings and `job`, and the refusals among them: live
 * tombstones that no longer fit (unless `accept`), and a key the table's rows do not hold once
 * (read from the table: its key columns). `now` is the tombstones' clock.
 */
export async function findConfigChanges(
  job: JobConfig,
  state: { configuredAs?: ConfiguredAs | undefined; discovery: DiscoveryState | null },
  snapshot: Snapshot | null,
  table: TableAccess,
  opts: { tombstones: TombstoneOwners; accept: boolean; now?: number },
): Promise<ConfigChangeFindings> {
  const changes = describeChanges(state.configuredAs, configuredAs(job), state.discovery);
  const refusals: ConfigError[] = [];
  const { target } = job;
  const history = target.mode === 'scd2' ? historyRefusal(job, state.configuredAs) : null;
  if (history) refusals.push(history);
  else if (keyed(target.mode)) {
    const spec = { job: job.name, key: target.key!, orderBy: target.orderBy! };
    // Accepted now, or by an earlier run (its state recorded this key and orderBy: the other owners' old tombstones are dropped from reading).
    const accept = opts.accept || acceptedBefore(state.configuredAs, job);
    const now = opts.now ?? Date.now();
    for (const owner of opts.tombstones) {
      const s = owner.state;
      if (!s) continue;
      const live = liveTombstoneFiles(s, target.tombstoneRetention, now);
      const fit = tombstoneFit(s, spec);
      if (live.length === 0 || fit === 'same') continue;
      const rows = live.reduce((n, f) => n + f.rows, 0);
      if (fit === 'unfit' && !accept)
        refusals.push(unfitTombstones(s, { ...spec, job: owner.folder }, live));
      else changes.push(tombstoneChange(s, spec, fit, rows, owner.folder));
    }
  }
  if (target.mode === 'merge') {
    const duplicates =
      snapshot && mayHoldDuplicates(state.configuredAs, target.key!)
        ? await duplicateKeys(table.session, table, snapshot, target.key!, DUPLICATE_EXAMPLES)
        : null;
    if (duplicates) refusals.push(duplicateRefusal(job, state.configuredAs!, duplicates));
  }
  return { changes, refusals };
}

/**
 * True when the job's state was committed with the job's current key and orderBy: a change of
 * them was accepted by that run (or there was none), so tombstones of another owner (a backfill)
 * written for the old ones are left unread instead of refused.
 */
export function acceptedBefore(recorded: ConfiguredAs | undefined, job: JobConfig): boolean {
  const t = recorded?.target;
  if (!t || !keyed(t.mode) || !keyed(job.target.mode)) return false;
  return (
    sameColumns(t.key ?? [], job.target.key!) &&
    sameColumns([t.orderBy ?? ''], [job.target.orderBy!])
  );
}

/** Modes that read a key and an orderBy, and tombstones written under them. */
const keyed = (mode: TargetMode): boolean => mode === 'merge' || mode === 'scd2';

/** The same column names in the same order (column names match case-insensitively). */
function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x.toLowerCase() === b[i]!.toLowerCase());
}

/**
 * An scd2 job whose recorded history was kept on another key or orderBy: refused, with or without
 * --accept-config-change, since the stored versions' intervals (valid_from, valid_to) are the old
 * orderBy's values within each old key, and a batch would rebuild every history it touches by the
 * new rules.
 */
function historyRefusal(job: JobConfig, recorded: ConfiguredAs | undefined): ConfigError | null {
  const was = recorded?.target;
  if (was?.mode !== 'scd2') return null;
  const { key, orderBy } = job.target;
  const track = job.target.trackColumns ?? { except: [] };
  const [field, from, to] = !sameColumns(was.key ?? [], key!)
    ? ['target.key', `[${(was.key ?? []).join(', ')}]`, `[${key!.join(', ')}]`]
    : !sameColumns([was.orderBy ?? ''], [orderBy!])
      ? ['target.orderBy', was.orderBy ?? 'unset', orderBy!]
      : // Absent in states written before it was recorded: nothing to compare.
        was.trackColumns && !sameTracking(was.trackColumns, track)
        ? ['target.trackColumns', showTracking(was.trackColumns), showTracking(track)]
        : [];
  if (!field) return null;
  const why =
    field === 'target.key'
      ? `the table is an scd2 history of each ${from}: a version's valid_to is the valid_from of the next version of that key, and versions grouped by ${to} would be closed and split by rows of other keys`
      : field === 'target.orderBy'
        ? `the table is an scd2 history ordered by ${from}: its versions' valid_from and valid_to hold ${from} values, and placing new versions by ${to} would rebuild every history a batch touches by another clock`
        : `the table is an scd2 history whose versions were opened by changes in the columns tracked then: a batch rebuilds the history of each key it touches, and under ${to} stored versions that differ only in columns no longer tracked would be merged into one (their values lost) while other keys keep them`;
  return new ConfigError(
    `[job] ${job.name}: ${field} changed from ${from} to ${to}, but ${why}. ` +
      `Keep ${field} as ${from}, or load into a new target (a backfill fills it); --accept-config-change does not apply to a history`,
    { field, job: job.name, from, to },
  );
}

/** A tombstone change that is not refused: re-keyed, or dropped as the user accepted. */
function tombstoneChange(
  s: TombstoneState,
  spec: { key: string[]; orderBy: string },
  fit: 'rekey' | 'unfit',
  rows: number,
  folder: string,
): ConfigChange {
  const field =
    fit === 'rekey' || s.orderBy.toLowerCase() === spec.orderBy.toLowerCase()
      ? 'target.key'
      : 'target.orderBy';
  const [from, to] =
    field === 'target.key'
      ? [`[${s.key.join(', ')}]`, `[${spec.key.join(', ')}]`]
      : [s.orderBy, spec.orderBy];
  const effect =
    fit === 'rekey'
      ? `the ${rows} remembered deletes (tombstones of ${folder}) are re-keyed on [${spec.key.join(', ')}]: a key deleted under ${from} stays deleted`
      : `the ${rows} remembered deletes (tombstones of ${folder}) are dropped, as --accept-config-change asks: a late row older than its delete may bring a deleted key back`;
  return { field: `${field} (tombstones)`, from, to, effect };
}

/**
 * True when a MERGE on `key` may meet more than one stored row per key: the table was appended
 * to, or was merged on a key that `key` does not contain (a narrower or another key).
 */
function mayHoldDuplicates(recorded: ConfiguredAs | undefined, key: readonly string[]): boolean {
  if (!recorded) return false;
  if (
    recorded.target.mode === 'append' ||
    recorded.target.mode === 'scd2' || // a row per version
    (recorded.target.mode === 'replace' && !recorded.target.key)
  )
    return true;
  const now = new Set(key.map((c) => c.toLowerCase()));
  return !(recorded.target.key ?? []).every((c) => now.has(c.toLowerCase()));
}

/** Keys with more than one row a refusal names. */
const DUPLICATE_EXAMPLES = 5;

function duplicateRefusal(job: JobConfig, recorded: ConfiguredAs, d: DuplicateKeys): ConfigError {
  const key = job.target.key!;
  // From append or replace the mode changed (a replace table's key, if it had one, may have too).
  const modeChanged = recorded.target.mode !== 'merge';
  const change = modeChanged
    ? `target.mode changed from ${recorded.target.mode} to merge on key [${key.join(', ')}]`
    : `target.key changed from [${(recorded.target.key ?? []).join(', ')}] to [${key.join(', ')}]`;
  const shown = d.examples
    .map(
      (e) =>
        `${Object.entries(e.key)
          .map(([c, v]) => `${c}=${String(v)}`)
          .join(', ')} (${e.rows} rows)`,
    )
    .join('; ');
  const field = modeChanged ? 'target.mode' : 'target.key';
  return new ConfigError(
    `[job] ${job.name}: ${change}, but the table holds more than one row for ${d.keys} such key${d.keys === 1 ? '' : 's'}: ${shown}${d.keys > d.examples.length ? '; …' : ''}. ` +
      `A MERGE would update every one of them alike, leaving identical duplicates. Keep ${field} as it was, or remove the extra rows from the table first`,
    { field, job: job.name, duplicateKeys: d.keys, examples: d.examples.map((e) => e.key) },
  );
}

type Tracking = string[] | { except: string[] };

/** The same tracked columns: the same form and the same names, in any order and case. */
function sameTracking(a: Tracking, b: Tracking): boolean {
  const names = (t: Tracking) =>
    (Array.isArray(t) ? t : t.except).map((c) => c.toLowerCase()).sort();
  return Array.isArray(a) === Array.isArray(b) && sameColumns(names(a), names(b));
}

function showTracking(t: Tracking): string {
  if (Array.isArray(t)) return `[${t.join(', ')}]`;
  return t.except.length === 0 ? 'unset' : `{ except: [${t.except.join(', ')}] }`;
}

/** The changed settings (pure); none when nothing was recorded. */
export function describeChanges(
  was: ConfiguredAs | undefined,
  now: ConfiguredAs,
  discovery: DiscoveryState | null,
): ConfigChange[] {
  if (!was) return [];
  const out: ConfigChange[] = [];
  const add = (field: string, from: unknown, to: unknown, effect: string) =>
    out.push({ field, from: shown(from), to: shown(to), effect });
  const watermark = describeWatermark(discovery) ?? 'none yet';
  if (was.source.uri !== now.source.uri) {
    add(
      'source.uri',
      was.source.uri,
      now.source.uri,
      `the watermark (${watermark}) and the remembered files carry over: files of the new source behind the watermark are not loaded (backfill them)`,
    );
  }
  for (const f of ['include', 'exclude'] as const) {
    if (shown(was.source[f] ?? []) !== shown(now.source[f] ?? [])) {
      add(
        `source.${f}`,
        was.source[f] ?? [],
        now.source[f] ?? [],
        `files it newly selects behind the watermark (${watermark}) are not loaded (backfill them)`,
      );
    }
  }
  discoverChanges(was.discover, now.discover, discovery, add);
  const [a, b] = [was.target, now.target];
  if (a.mode !== b.mode) {
    add(
      'target.mode',
      a.mode,
      b.mode,
      b.mode === 'append'
        ? 'rows are appended from now: nothing is updated or deleted by key, the remembered deletes no longer apply'
        : b.mode === 'replace'
          ? 'each delivery replaces the whole table from now: rows it lacks are removed, deleteWhen and tombstones no longer apply'
          : b.mode === 'scd2'
            ? `each change of a key opens a version from now (history on key [${(b.key ?? []).join(', ')}]); a table without the history columns is refused`
            : `rows are merged on key [${(b.key ?? []).join(', ')}] from now`,
    );
  } else if (b.mode === 'scd2') {
    const refused = 'refused: the stored history is kept on the recorded one (see the error)';
    if (!sameColumns(a.key ?? [], b.key ?? [])) add('target.key', a.key, b.key, refused);
    if (!sameColumns([a.orderBy ?? ''], [b.orderBy ?? '']))
      add('target.orderBy', a.orderBy, b.orderBy, refused);
    if (a.trackColumns && b.trackColumns && !sameTracking(a.trackColumns, b.trackColumns))
      add(
        'target.trackColumns',
        showTracking(a.trackColumns),
        showTracking(b.trackColumns),
        refused,
      );
  } else if (b.mode === 'merge') {
    if (shown(a.key) !== shown(b.key))
      add(
        'target.key',
        a.key,
        b.key,
        `incoming rows are matched with stored rows on [${(b.key ?? []).join(', ')}] from now`,
      );
    if (a.orderBy !== b.orderBy)
      add(
        'target.orderBy',
        a.orderBy,
        b.orderBy,
        `an incoming row wins over the stored row by ${b.orderBy} from now`,
      );
  }
  // partitionBy is held against the table itself (./table-settings.ts), not against the record.
  return out;
}

type Add = (field: string, from: unknown, to: unknown, effect: string) => void;

function discoverChanges(
  was: ConfiguredAs['discover'],
  now: ConfiguredAs['discover'],
  discovery: DiscoveryState | null,
  add: Add,
): void {
  if (was.by !== now.by) {
    const notified = was.by === 'notifications' || now.by === 'notifications';
    add(
      'source.discover.by',
      was.by,
      now.by,
      notified
        ? 'refused: a job cannot change to or from notifications (a new job or target loads that way)'
        : 'refused until the job is reset to a watermark of the new mode (tidemark reset)',
    );
    return;
  }
  if (was.by === 'modified' && now.by === 'modified') {
    if (was.settleMs === now.settleMs) return;
    const remembered =
      discovery?.mode === 'modified' && discovery.rememberedAfter !== undefined
        ? new Date(discovery.rememberedAfter).toISOString()
        : null;
    add(
      'source.discover.settle',
      durationText(was.settleMs),
      durationText(now.settleMs),
      now.settleMs > was.settleMs
        ? `runs re-list from watermark - ${durationText(now.settleMs)}, but never from before what the state remembers${remembered ? ` (files modified after ${remembered})` : ''}: files loaded before are kept, none is loaded twice`
        : `a file that becomes visible more than ${durationText(now.settleMs)} after its LastModified is no longer seen`,
    );
    return;
  }
  if (was.by !== 'partition' || now.by !== 'partition') return;
  if (was.layout !== now.layout)
    add(
      'source.discover.layout',
      was.layout,
      now.layout,
      `folders are read with the new layout; the watermark (${describeWatermark(discovery) ?? 'none yet'}) carries over when its granularity fits, and the remembered files are re-keyed into the new folders of their partitions (files moved there are not loaded again)`,
    );
  if (was.timezone !== now.timezone)
    add(
      'source.discover.timezone',
      was.timezone,
      now.timezone,
      'folder dates are read in the new zone; the watermark carries over as a partition id',
    );
  if (was.lookback !== now.lookback) {
    const from = discovery?.mode === 'partition' ? discovery.rememberedFrom : null;
    add(
      'source.discover.lookback',
      was.lookback,
      now.lookback,
      now.lookback > was.lookback
        ? `rescans reach back no further than the state remembers${from ? ` (partition ${from})` : ''}: no file is loaded twice`
        : `late files in partitions more than ${now.lookback} before the watermark are no longer looked at`,
    );
  }
}

function shown(value: unknown): string {
  if (Array.isArray(value)) return `[${value.join(', ')}]`;
  return value === undefined ? 'unset' : String(value);
}

/** Log the changes as warnings (a run and a backfill). */
export function logConfigChanges(
  logger: { warn(obj: object, msg: string): void },
  job: string,
  changes: readonly ConfigChange[],
): void {
  for (const c of changes)
    logger.warn(
      { job, field: c.field, from: c.from, to: c.to },
      `${c.field} changed from ${c.from} to ${c.to}: ${c.effect}`,
    );
}
