/**
 * The config file's schema (docs/configuration.md), validated with zod. Every field has its default here,
 * so the rest of tidemark sees a complete, typed config. The descriptions go into the JSON
 * schema for editors (`tidemark.schema.json`, ./json-schema.ts).
 */
import { z } from 'zod';
import { checkDiscovery } from '../discovery/config.js';
import { globProblem } from '../discovery/filter.js';
import { tableProperties } from './table-properties.js';
import { parseDuration, parseSize } from './units.js';
import { moveTargetOverlaps } from './uri-overlap.js';

const toMs = (v: string | number, ctx: z.RefinementCtx): number => {
  const ms = typeof v === 'number' ? v : parseDuration(v);
  if (ms === null) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration such as 30s, 15m, 2h or 7d, got ${JSON.stringify(v)}`,
    });
    return z.NEVER;
  }
  return ms;
};
const durationInput = z.union([z.string(), z.number().int().nonnegative()]);
/** A duration in ms, or undefined when not set (a storage override falls back to the global one). */
const durationText = durationInput.transform(toMs);
const duration = (fallback: string) => durationInput.default(fallback).transform(toMs);

const size = (fallback: string, opts: { zero?: boolean } = {}) =>
  z
    .union([z.string(), opts.zero ? z.number().int().nonnegative() : z.number().int().positive()])
    .default(fallback)
    .transform((v, ctx) => {
      const bytes = typeof v === 'number' ? v : parseSize(v);
      if (bytes === null || bytes < 0 || (bytes === 0 && !opts.zero)) {
        ctx.addIssue({
          code: 'custom',
          message: `expected a size such as 64MiB or 1GiB${opts.zero ? ' (or 0)' : ''}, got ${JSON.stringify(v)}`,
        });
        return z.NEVER;
      }
      return bytes;
    });

const nonEmpty = z.string().trim().min(1, 'must not be empty');
const columnList = z.array(nonEmpty).min(1, 'must name at least one column');

const common = {
  start: z
    .string()
    .optional()
    .describe(
      'First partition (2026-11-01, 2026-11-01T05) or timestamp of an initial load; default: the oldest',
    ),
  requireSuccessMarker: z
    .boolean()
    .default(false)
    .describe('Load a partition (or folder) only once its _SUCCESS marker exists'),
  onOverwrite: z
    .enum(['reload', 'ignore'])
    .default('reload')
    .describe('What to do with a file overwritten in place (new ETag)'),
};

const discoverByPartition = z.strictObject({
  by: z.literal('partition').describe('Files land in time-partitioned folders'),
  layout: nonEmpty.describe(
    'Folder layout, e.g. {yyyy}/{mm}/{dd} or dt={yyyy}-{mm}-{dd}/hour={HH}',
  ),
  lookback: z
    .number()
    .int()
    .nonnegative()
    .default(2)
    .describe('Partitions before the watermark rescanned for late files'),
  lateCheck: z
    .number()
    .int()
    .nonnegative()
    .default(2)
    .describe(
      'Partitions behind the lookback window still listed, so that files landing there too late to load are reported (skipped and named), never passed over in silence; 0 turns it off',
    ),
  timezone: z.string().default('UTC').describe('IANA zone the folder dates are written in'),
  markerTimeout: duration('24h').describe(
    'With requireSuccessMarker: how long a partition may wait for its _SUCCESS before status, the run report and the metrics call it overdue (24h)',
  ),
  ...common,
});

const discoverByModified = z.strictObject({
  by: z.literal('modified').describe('Files anywhere below the prefix, by LastModified'),
  settle: duration('15m').describe(
    'Settle window: how far below the watermark each run re-lists (30s, 15m, 2h)',
  ),
  incrementalListing: z
    .boolean()
    .default(false)
    .describe(
      'Keys sort by time (Firehose-style yyyy/mm/dd/hh/ prefixes, timestamped names): each run lists only the keys after the newest one the last load found older than the window (S3 StartAfter)',
    ),
  ...common,
});

const discoverByNotifications = z.strictObject({
  by: z
    .literal('notifications')
    .describe(
      'Files named by S3 event notifications (ObjectCreated) on an SQS queue, with a periodic reconciling listing for events that were lost',
    ),
  queue: nonEmpty.describe(
    'SQS queue URL the bucket notifications go to: https://sqs.<region>.amazonaws.com/<account>/<name>',
  ),
  reconcileEvery: duration('24h').describe(
    "How often a run lists the whole prefix to load files whose event was lost, like Auto Loader's backfillInterval (24h); the first run always lists",
  ),
  visibilityTimeout: duration('5m').describe(
    "How long a received message stays hidden from other consumers (1s to 12h, 5m); a run extends it while it holds the message, so a long run is not redelivered its own messages, and a killed run's messages come back after it",
  ),
  region: z
    .string()
    .optional()
    .describe(
      "Region the queue's requests are signed for; default: from the queue URL (sqs.<region>.amazonaws.com), else the source storage region",
    ),
  start: common.start.describe(
    'Oldest LastModified a reconciling listing loads (2026-11-01 or an ISO timestamp with offset); default: every file',
  ),
  onOverwrite: common.onOverwrite,
});

/** `source.discover`: the shape here, what only discovery understands (layout, zone, start) there. */
const discover = z
  .discriminatedUnion('by', [discoverByPartition, discoverByModified, discoverByNotifications])
  .superRefine((d, ctx) => {
    // Every problem of the block at once: an invalid layout does not hide an invalid timezone.
    for (const err of checkDiscovery(d).problems) {
      const field = String(err.context.field ?? '').replace(/^discover\./, '');
      ctx.addIssue({
        code: 'custom',
        path: field ? [field] : [],
        message: err.message.replace(/^\[discovery\] /, ''),
      });
    }
  })
  .describe(
    'How new files are found: by partition folder, by modification time, or by S3 event notifications',
  );

/** A strptime format (DuckDB's directives: %Y %m %d %H %M %S %f %z %p …); checked for a directive, DuckDB checks the rest. */
const temporalFormat = z
  .string()
  .min(1)
  .refine(
    (f) => /%[-]?[A-Za-z]/.test(f),
    'must be a strptime format with directives such as %Y, %m, %d',
  );

const oneChar = (what: string) =>
  z.string().max(1, `must be one character (or empty for no ${what})`);

/** `source.csv`: one dialect for every CSV/TSV file of the job; nothing of it is sniffed per file. */
const csvOptions = z
  .strictObject({
    header: z.boolean().optional().describe('The first line names the columns (default true)'),
    delimiter: z
      .string()
      .min(1)
      .max(4)
      .refine((d) => !/[\r\n]/.test(d), 'must not contain a line break')
      .optional()
      .describe("Field separator (default ',' for CSV, tab for TSV)"),
    quote: oneChar('quoting')
      .optional()
      .describe('Quote character (default "); empty: fields are never quoted'),
    escape: oneChar('escaping')
      .optional()
      .describe('Escape character inside quotes (default: the quote character, as in "")'),
    nullstr: z
      .string()
      .optional()
      .describe(
        'Text read as NULL (default: an unquoted empty field; a quoted one, "", is an empty string)',
      ),
    dateFormat: temporalFormat
      .optional()
      .describe(
        "strptime format of every date text of the job, e.g. '%d/%m/%Y' (ISO 2026-01-31 always reads); without it, a text that reads two ways (01/02/2026) fails naming both readings",
      ),
    timestampFormat: temporalFormat
      .optional()
      .describe(
        "strptime format of every timestamp text of the job, e.g. '%d/%m/%Y %H:%M:%S' (ISO 8601 always reads); without it, a text that reads two ways fails naming both readings",
      ),
  })
  .superRefine((c, ctx) => {
    if (c.quote && c.delimiter?.includes(c.quote)) {
      ctx.addIssue({ code: 'custom', path: ['quote'], message: 'must differ from the delimiter' });
    }
  })
  .describe(
    'CSV/TSV dialect of every file of the job (RFC 4180 by default: comma, " quotes, "" escapes, header row)',
  );

const glob = z.string().superRefine((pattern, ctx) => {
  const problem = globProblem(pattern);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
const globList = (what: string) =>
  z
    .union([glob, z.array(glob).min(1, 'must list at least one pattern')])
    .transform((v) => (typeof v === 'string' ? [v] : v))
    .optional()
    .describe(what);

const storageFields = {
  endpoint: z.url().optional().describe('S3 endpoint URL (MinIO, other S3-compatible stores)'),
  region: z.string().optional().describe('AWS region'),
  forcePathStyle: z
    .boolean()
    .optional()
    .describe('Path-style addressing (http://host/bucket/key), as MinIO needs'),
  connectTimeout: durationText
    .optional()
    .describe('Longest wait for a connection to the store (default 3s)'),
  requestTimeout: durationText
    .optional()
    .describe('Longest wait for the answer to one request, up to its headers (default 2m)'),
  idleTimeout: durationText
    .optional()
    .describe('Longest silence while a response body streams in (default 30s)'),
  maxAttempts: z
    .number()
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe('Attempts per request before a run gives up with exit code 4 (default 6)'),
  uploadChecksum: z
    .enum(['CRC64NVME', 'CRC32', 'CRC32C', 'SHA1', 'SHA256', 'MD5', 'off'])
    .optional()
    .describe(
      "Checksum every upload carries for the store to verify before storing it, and the whole object's checksum in the store's answer is compared with the bytes' own (default CRC64NVME; CRC32, CRC32C full-object for multipart uploads; SHA1, SHA256 composite; MD5 sends Content-MD5; off for a store that refuses the header)",
    ),
  etagChecksum: z
    .boolean()
    .optional()
    .describe(
      'Check a single-part object without a checksum of its own, and an upload whose answer carries none, against its ETag as its MD5 (default true; false for a store whose ETags are not MD5s)',
    ),
};
const singleWriterDescription =
  "The store ignores conditional writes and tidemark is the table's only writer";

/** Settings over the global `storage`, field by field. */
const sourceStorage = z
  .strictObject(storageFields)
  .describe('S3 client settings of this source, over the top-level storage, field by field');
const targetStorage = z
  .strictObject({
    ...storageFields,
    singleWriter: z.boolean().optional().describe(singleWriterDescription),
  })
  .describe('S3 client settings of this target, over the top-level storage, field by field');

/** Delta type names `source.columns` accepts (simple types; decimal(p,s) with 1 <= p <= 38, 0 <= s <= p). */
const DECLARABLE_TYPES = [
  'string',
  'long',
  'integer',
  'short',
  'byte',
  'double',
  'float',
  'boolean',
  'date',
  'timestamp',
  'timestamp_ntz',
  'binary',
];
const declaredType = z
  .string()
  .transform((t) => t.trim().toLowerCase().replace(/\s+/g, ''))
  .superRefine((t, ctx) => {
    const dec = /^decimal\((\d+),(\d+)\)$/.exec(t);
    if (
      dec
        ? Number(dec[1]) >= 1 && Number(dec[1]) <= 38 && Number(dec[2]) <= Number(dec[1])
        : DECLARABLE_TYPES.includes(t)
    )
      return;
    ctx.addIssue({
      code: 'custom',
      message: `must be a Delta type: ${DECLARABLE_TYPES.join(', ')} or decimal(p,s) (p up to 38), got ${JSON.stringify(t)}`,
    });
  });

/**
 * `source.afterLoad`: what `tidemark cleanup` (and, with atEndOfRun, a successful run) does with a
 * source file whose load committed at least `after` ago (../job/cleanup-plan.ts decides which).
 */
const afterLoad = z
  .strictObject({
    delete: z
      .literal(true)
      .optional()
      .describe('Delete each file whose load committed at least `after` ago'),
    move: nonEmpty
      .optional()
      .describe(
        'Move each such file below this URI (s3://bucket/archive/, file:///path or a path relative to the config file), keeping its key; never inside the source or the target table',
      ),
    after: duration('30d').describe(
      'How long after the commit that loaded a file it is kept in place (30d)',
    ),
    atEndOfRun: z
      .boolean()
      .default(false)
      .describe(
        'Also clean up at the end of every successful run (default: only `tidemark cleanup --apply` does)',
      ),
  })
  .superRefine((a, ctx) => {
    if ((a.delete === undefined) === (a.move === undefined))
      ctx.addIssue({ code: 'custom', message: 'needs exactly one of move: <uri> or delete: true' });
  })
  .describe(
    'Move or delete the source files some time after their load committed (off by default; `tidemark cleanup` shows what it would do first)',
  );

const source = z
  .strictObject({
    uri: nonEmpty.describe(
      's3://bucket/prefix/, file:///path or a path (relative to the config file)',
    ),
    format: z
      .enum(['parquet', 'csv', 'tsv', 'json', 'ndjson'])
      .optional()
      .describe(
        "Format of every file; default: from each file's name (.parquet, .csv, .tsv, .json, .ndjson; .gz/.zst)",
      ),
    csv: csvOptions.optional(),
    columns: z
      .record(nonEmpty, declaredType)
      .optional()
      .describe(
        "The type of the columns that matter (keys, versions, dates), e.g. { id: 'decimal(38,0)', seq: long, day: date }: a table the job creates gets them, an existing table must have them, and every file is read in them (a value that does not convert exactly fails naming file, line and column); other CSV columns are inferred once, from the first batch",
      ),
    include: globList(
      'Only keys matching one of these globs are loaded (relative to uri; a pattern without / matches the file name)',
    ),
    exclude: globList(
      'Keys matching one of these globs are never loaded (relative to uri; a pattern without / matches the file name)',
    ),
    storage: sourceStorage.optional(),
    discover,
    snapshot: z
      .boolean()
      .default(false)
      .describe(
        "Each delivery is a full extract of the source table (a partition, or each file matching snapshotPattern): after the newest one is merged, keys the table holds and it lacks are deleted in the same commit (merge mode), or their current versions closed at the extract's as-of time (scd2 mode, with snapshotAsOf)",
      ),
    snapshotAsOf: nonEmpty
      .optional()
      .describe(
        "With snapshot in scd2 mode (required there): the extract's column holding the time it was taken, one non-NULL value on every row, comparable with target.orderBy; the keys it lacks are closed at that time. It is metadata of the extract, never stored in the table",
      ),
    snapshotPattern: glob
      .optional()
      .describe(
        'With snapshot: the files that are full extracts, each its own (a glob like source.include); other files are changes, merged as usual',
      ),
    maxDeleteShare: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe(
        "With snapshot: the largest share of the table's keys one snapshot may delete (scd2 mode: of the keys whose current version is open, may close) (0.5); a larger one (an empty or cut-off extract) is refused, exit 1, unless run --allow-large-delete",
      ),
    afterLoad: afterLoad.optional(),
  })
  .superRefine((src, ctx) => {
    // S3 sends the events: a local folder has no notifications to read.
    if (src.discover.by === 'notifications' && !/^s3a?:\/\//i.test(src.uri)) {
      ctx.addIssue({
        code: 'custom',
        path: ['discover', 'by'],
        message: `notifications need an s3:// source (S3 sends the events), got ${JSON.stringify(src.uri)}`,
      });
    }
    if (src.snapshotPattern !== undefined && !src.snapshot)
      ctx.addIssue({
        code: 'custom',
        path: ['snapshotPattern'],
        message: 'applies only with snapshot: true',
      });
    if (src.snapshotAsOf !== undefined && !src.snapshot)
      ctx.addIssue({
        code: 'custom',
        path: ['snapshotAsOf'],
        message: 'applies only with snapshot: true (in scd2 mode)',
      });
  });

const target = z
  .strictObject({
    uri: nonEmpty.describe(
      'Table root: s3://bucket/path, file:///path or a path (relative to the config file)',
    ),
    mode: z
      .enum(['merge', 'append', 'replace', 'scd2'])
      .default('merge')
      .describe(
        'merge by key, append (immutable event logs), replace (each delivery becomes the whole table: small tables reloaded whole), or scd2 (history: each change of a key opens a version, SCD Type 2)',
      ),
    key: columnList
      .optional()
      .describe(
        'Key columns (required for merge and scd2; in replace mode, optional: the delivery keeps its latest row per key)',
      ),
    orderBy: nonEmpty
      .optional()
      .describe(
        "Version column: an incoming row wins only if not older (required for merge, and for replace with a key); in scd2 mode it places each version in the key's history and is its valid-from time",
      ),
    partitionBy: z
      .array(nonEmpty)
      .default([])
      .describe('Partition columns of a table the job creates'),
    tableProperties: tableProperties
      .optional()
      .describe(
        'Delta table properties of a table the job creates, e.g. delta.enableRowTracking: true, delta.enableInCommitTimestamps: true, delta.checkpointPolicy: v2, delta.appendOnly: true (the protocol gets the features they need)',
      ),
    columnMapping: z
      .enum(['none', 'name', 'id'])
      .optional()
      .describe(
        "Column mapping of a table the job creates: none (the default), name or id (columns get physical names and ids, so readers can rename and drop them); for an existing table, if set, it must be the table's mode",
      ),
    deleteWhen: nonEmpty
      .optional()
      .describe("SQL condition on the incoming row that deletes its key (is_deleted, Op = 'D')"),
    validFrom: nonEmpty
      .optional()
      .describe(
        'scd2 mode: the column holding when a version became current, its orderBy value (valid_from)',
      ),
    validTo: nonEmpty
      .optional()
      .describe(
        "scd2 mode: the column holding when a version stopped being current, the next version's orderBy or the delete's; NULL while current (valid_to)",
      ),
    isCurrent: nonEmpty
      .optional()
      .describe('scd2 mode: the column that is true on the current version of a key (is_current)'),
    trackColumns: z
      .union([columnList, z.strictObject({ except: columnList })])
      .optional()
      .describe(
        'scd2 mode: the columns whose change opens a new version, as a list or { except: [...] }; a change in other columns updates the version in place (default: every column but the key, orderBy and lineage columns)',
      ),
    tombstoneRetention: duration('7d').describe('How long a deleted key is remembered (7d)'),
    /**
     * Rows per data file the job writes. Smaller files make a MERGE rewrite less (cost follows
     * the change); `tidemark optimize` compacts small files later.
     */
    maxRowsPerFile: z
      .number()
      .int()
      .positive()
      .default(250_000)
      .describe('Rows per data file written'),
    deletionVectors: z
      .union([z.literal('auto'), z.boolean()])
      .default('auto')
      .describe(
        'MERGE marks changed rows in deletion vectors instead of rewriting files: auto (follow the table; tables the job creates in merge mode get them), true, or false (for readers without deletion-vector support)',
      ),
    changeDataFeed: z
      .boolean()
      .default(false)
      .describe(
        'A table the job creates records a change data feed (delta.enableChangeDataFeed): MERGEs that update or delete also write _change_data files. An existing table keeps its own setting, and tidemark writes the feed whenever the table has it on',
      ),
    rewriteFilesBelow: size('1MiB', { zero: true }).describe(
      'A MERGE rewrites a changed file smaller than this instead of giving it a deletion vector (1MiB; 0: size never decides)',
    ),
    rewriteDeletedShare: z
      .number()
      .gt(0)
      .max(1)
      .default(0.5)
      .describe(
        'A MERGE rewrites a changed file that would have this share of its rows or more deleted (0.5)',
      ),
    storage: targetStorage.optional(),
  })
  .superRefine((t, ctx) => {
    if (t.mode !== 'scd2') {
      for (const field of SCD2_FIELDS) {
        if (t[field] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: `applies only when mode is scd2 (it is ${t.mode})`,
          });
      }
    }
    if (t.mode === 'scd2') {
      scd2Problems(t).forEach((p) => ctx.addIssue({ code: 'custom', ...p }));
      return;
    }
    if (t.mode === 'replace') {
      // A key reduces the delivery to one row per key, which needs the version that picks it.
      if (t.key && !t.orderBy)
        ctx.addIssue({
          code: 'custom',
          path: ['orderBy'],
          message: 'is required when mode is replace with a key',
        });
      if (!t.key && t.orderBy)
        ctx.addIssue({
          code: 'custom',
          path: ['key'],
          message: 'is required when mode is replace with an orderBy',
        });
      if (t.deleteWhen)
        ctx.addIssue({
          code: 'custom',
          path: ['deleteWhen'],
          message:
            'does not apply when mode is replace (a key the delivery lacks is gone from the table)',
        });
      return;
    }
    if (t.mode === 'append') {
      // Rows are appended, never deleted: a condition that deletes nothing must not pass unnoticed.
      if (t.deleteWhen)
        ctx.addIssue({
          code: 'custom',
          path: ['deleteWhen'],
          message:
            'does not apply when mode is append (rows are appended, never deleted by key): remove it, or use mode merge',
        });
      return;
    }
    if (!t.key)
      ctx.addIssue({ code: 'custom', path: ['key'], message: 'is required when mode is merge' });
    if (!t.orderBy)
      ctx.addIssue({
        code: 'custom',
        path: ['orderBy'],
        message: 'is required when mode is merge',
      });
  });

/** The fields that only scd2 mode reads. */
const SCD2_FIELDS = ['validFrom', 'validTo', 'isCurrent', 'trackColumns'] as const;

/** The history columns of an scd2 target, by role. */
export interface Scd2Columns {
  validFrom: string;
  validTo: string;
  isCurrent: string;
}

/** The history column names of a target, defaults filled in. */
export function scd2Columns(t: {
  validFrom?: string | undefined;
  validTo?: string | undefined;
  isCurrent?: string | undefined;
}): Scd2Columns {
  return {
    validFrom: t.validFrom ?? 'valid_from',
    validTo: t.validTo ?? 'valid_to',
    isCurrent: t.isCurrent ?? 'is_current',
  };
}

/** Lineage columns tidemark adds to every row (../engine/file-select.ts spells them too; config may not import the engine). */
const LINEAGE = ['_source_file', '_source_modified', '_source_row'];

/**
 * What an scd2 target needs: a key and an orderBy (a version's place in history), history column
 * names distinct from each other and from the key and orderBy, and tracked columns that are
 * neither (pure; each problem names its field).
 */
function scd2Problems(t: {
  key?: string[] | undefined;
  orderBy?: string | undefined;
  validFrom?: string | undefined;
  validTo?: string | undefined;
  isCurrent?: string | undefined;
  trackColumns?: string[] | { except: string[] } | undefined;
  changeDataFeed: boolean;
}): Array<{ path: (string | number)[]; message: string }> {
  const out: Array<{ path: (string | number)[]; message: string }> = [];
  if (!t.key) out.push({ path: ['key'], message: 'is required when mode is scd2' });
  if (!t.orderBy)
    out.push({
      path: ['orderBy'],
      message: "is required when mode is scd2 (it orders a key's versions)",
    });
  const cols = scd2Columns(t);
  const reserved = new Map<string, string>();
  for (const k of t.key ?? []) reserved.set(k.toLowerCase(), 'a key column');
  if (t.orderBy) reserved.set(t.orderBy.toLowerCase(), 'the orderBy column');
  for (const field of ['validFrom', 'validTo', 'isCurrent'] as const) {
    const name = cols[field];
    const lower = name.toLowerCase();
    const clash = reserved.get(lower) ?? (LINEAGE.includes(lower) ? 'a lineage column' : null);
    if (clash !== null)
      out.push({
        path: [field],
        message: `names ${JSON.stringify(name)}, which is ${clash}; the history columns need names of their own`,
      });
    else reserved.set(lower, `target.${field}`);
  }
  const listed = Array.isArray(t.trackColumns) ? t.trackColumns : t.trackColumns?.except;
  const at = Array.isArray(t.trackColumns) ? ['trackColumns'] : ['trackColumns', 'except'];
  (listed ?? []).forEach((c, i) => {
    const lower = c.toLowerCase();
    const clash = reserved.get(lower) ?? (LINEAGE.includes(lower) ? 'a lineage column' : null);
    if (clash !== null)
      out.push({
        path: [...at, i],
        message: `names ${JSON.stringify(c)}, which is ${clash}: only other columns are tracked`,
      });
  });
  if (t.changeDataFeed)
    out.push({
      path: ['changeDataFeed'],
      message: 'is not supported in scd2 mode yet (the history table itself records every change)',
    });
  return out;
}

/**
 * scd2 mode closes a snapshot's absent keys at the time the extract was taken, which only the
 * extract can say (a column of it): never guessed from a file's date. Outside scd2 it is unused.
 */
function snapshotAsOfProblems(j: {
  source: { snapshot: boolean; snapshotAsOf?: string | undefined };
  target: { mode: string; key?: string[] | undefined; orderBy?: string | undefined };
}): { path: (string | number)[]; message: string }[] {
  const asOf = j.source.snapshotAsOf;
  const path = ['source', 'snapshotAsOf'];
  if (j.target.mode !== 'scd2')
    return asOf === undefined || !j.source.snapshot
      ? []
      : [{ path, message: `applies only when target.mode is scd2 (it is ${j.target.mode})` }];
  if (!j.source.snapshot) return [];
  if (asOf === undefined)
    return [
      {
        path,
        message:
          "is required with source.snapshot in scd2 mode: the extract's column holding when it was taken, the time its absent keys are closed at",
      },
    ];
  const lower = asOf.toLowerCase();
  const clash = [...(j.target.key ?? []), ...(j.target.orderBy ? [j.target.orderBy] : [])].find(
    (c) => c.toLowerCase() === lower,
  );
  return clash === undefined
    ? []
    : [
        {
          path,
          message: `names ${JSON.stringify(asOf)}, a key or orderBy column: the as-of column is metadata of the extract, not table data`,
        },
      ];
}

const job = z
  .strictObject({
    name: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
        'must be letters, digits, _ . - (starting with a letter or digit)',
      )
      .describe('Unique job name'),
    source,
    target,
    maxFilesPerBatch: z.number().int().positive().default(1000).describe('Files per commit'),
    maxBytesPerBatch: size('1GiB').describe('Bytes per commit (64MiB, 1GiB)'),
    onBadFile: z
      .enum(['fail', 'quarantine'])
      .default('fail')
      .describe('fail the batch, or quarantine the bad file and load the rest'),
    schemaEvolution: z
      .enum(['addColumns', 'fail'])
      .default('addColumns')
      .describe('Add new columns of new files, or fail naming them'),
    concurrency: z.number().int().min(1).max(256).default(16).describe('Parallel fetches'),
  })
  .superRefine((j, ctx) => {
    // The keys a snapshot lacks are deleted by key (merge) or their current versions closed (scd2).
    if (j.source.snapshot && j.target.mode !== 'merge' && j.target.mode !== 'scd2')
      ctx.addIssue({
        code: 'custom',
        path: ['source', 'snapshot'],
        message: `applies only when target.mode is merge or scd2 (it is ${j.target.mode})`,
      });
    for (const p of snapshotAsOfProblems(j)) ctx.addIssue({ code: 'custom', ...p });
    // As written; ./load.ts checks it again once relative paths are resolved.
    for (const message of moveTargetOverlaps(j))
      ctx.addIssue({ code: 'custom', path: ['source', 'afterLoad', 'move'], message });
  });

const storage = z
  .strictObject({
    ...storageFields,
    /** The operator asserts tidemark is the table's only writer (stores without conditional PUT). */
    singleWriter: z.boolean().default(false).describe(singleWriterDescription),
  })
  .describe(
    'S3 client settings of every source and target (credentials come from the AWS default chain)',
  );

/**
 * DuckDB's resources. The defaults suit a node shared with other jobs: a memory limit DuckDB
 * spills past (into the run's spool folder) rather than growing, and one thread per core.
 */
const engine = z
  .strictObject({
    memoryLimit: size('3GiB').describe(
      "DuckDB's memory limit; past it, work spills to the spool folder (3GiB)",
    ),
    threads: z
      .number()
      .int()
      .min(1)
      .max(256)
      .optional()
      .describe("DuckDB's threads (default: the machine's cores)"),
  })
  .describe('DuckDB resources of every job');

/** OpenLineage run events (off unless a file or url is given). */
const lineage = z
  .strictObject({
    file: nonEmpty
      .optional()
      .describe('NDJSON file the events are appended to (relative to the config file)'),
    url: z
      .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
      .optional()
      .describe(
        'HTTP(S) endpoint each event is POSTed to, e.g. Marquez http://marquez:5000/api/v1/lineage',
      ),
    namespace: nonEmpty.default('tidemark').describe('OpenLineage namespace of the jobs'),
    timeout: duration('10s').describe(
      'Timeout of one HTTP POST (a failed send is logged, never fails the run)',
    ),
  })
  .superRefine((l, ctx) => {
    if (!l.file && !l.url)
      ctx.addIssue({ code: 'custom', message: 'needs file or url (or leave lineage out)' });
  })
  .describe('OpenLineage START/COMPLETE/FAIL events per job run (off by default)');

/** A Prometheus text-format file per run (off unless given). */
const metrics = z
  .strictObject({
    file: nonEmpty.describe(
      'Metrics file, replaced after each job (relative to the config file); {job} in it: one file per job',
    ),
  })
  .describe('Prometheus metrics of each run, written to a file (off by default)');

export const configSchema = z
  .strictObject({
    storage: storage.default({ singleWriter: false }),
    engine: engine.prefault({}),
    lineage: lineage.optional(),
    metrics: metrics.optional(),
    jobs: z
      .array(job)
      .min(1, 'must list at least one job')
      .describe('The jobs, each a source loaded into a target table'),
  })
  .superRefine((cfg, ctx) => {
    const seen = new Map<string, number>();
    cfg.jobs.forEach((j, i) => {
      const first = seen.get(j.name);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['jobs', i, 'name'],
          message: `duplicates jobs[${first}].name ${JSON.stringify(j.name)}`,
        });
      } else seen.set(j.name, i);
    });
  });

export type TidemarkConfig = z.output<typeof configSchema>;
export type JobConfig = TidemarkConfig['jobs'][number];
/** How a job writes its table: merge, append, replace or scd2. */
export type TargetMode = JobConfig['target']['mode'];
export type StorageConfig = TidemarkConfig['storage'];
export type EngineConfig = TidemarkConfig['engine'];
/** Storage settings a source or target may set over the global ones. */
export type StorageOverride = NonNullable<JobConfig['target']['storage']>;
