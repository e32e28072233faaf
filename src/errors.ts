/**
 * Typed errors. Every error carries what it concerns (key, URI, table version, column)
 * and says whether retrying can help, so callers decide by class, never by message text.
 */

/** transient: retry may succeed; terminal: fix the input or the code; conflict: lost a race; usage: bad config or flags. */
export type ErrorKind = 'transient' | 'terminal' | 'conflict' | 'usage';

export interface ErrorContext {
  /** Object key or file path the error concerns. */
  key?: string;
  /** Storage or table URI. */
  uri?: string;
  /** Delta table version. */
  version?: number;
  /** Column name. */
  column?: string;
  /** Row number (1-based) where known. */
  row?: number;
  /** Config field path, e.g. `jobs[0].source.uri`. */
  field?: string;
  [extra: string]: unknown;
}

export class TidemarkError extends Error {
  readonly kind: ErrorKind;
  readonly context: ErrorContext;
  constructor(
    message: string,
    opts: { kind?: ErrorKind; context?: ErrorContext; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.kind = opts.kind ?? 'terminal';
    this.context = opts.context ?? {};
  }
}

/** A storage operation failed (network, permissions, disk). */
export class StorageError extends TidemarkError {}

/** A key that would resolve outside the storage root (`../`, absolute paths). */
export class UnsafeKeyError extends TidemarkError {
  constructor(key: string, uri: string) {
    super(`[storage] key escapes the root folder: ${JSON.stringify(key)}`, {
      kind: 'terminal',
      context: { key, uri },
    });
  }
}

/** The store does not honour conditional writes (If-None-Match: *), so commits cannot be made safe. */
export class ConditionalWriteUnsupportedError extends TidemarkError {}

/** The Delta log is malformed: gaps in versions, unparsable actions, missing protocol/metaData. */
export class DeltaLogError extends TidemarkError {}

/**
 * The table uses a protocol feature tidemark cannot honour; `context.feature` names it, `access`
 * the operation refused, and `blocks` whether the feature rules out reading or only writing.
 */
export class UnsupportedFeatureError extends TidemarkError {
  readonly feature: string;
  constructor(
    feature: string,
    access: 'read' | 'write',
    uri: string,
    detail?: string,
    blocks: 'read' | 'write' = access,
  ) {
    const what =
      blocks === 'read' ? 'which tidemark cannot read' : 'which tidemark can read but not write';
    super(
      `[delta] cannot ${access} table ${uri}: it uses the table feature '${feature}', ${what}` +
        (detail ? ` (${detail})` : ''),
      {
        kind: 'terminal',
        context: { uri, feature, access, blocks },
      },
    );
    this.feature = feature;
  }
}

/**
 * A write would change or remove rows of an append-only table (`delta.appendOnly = true`, PROTOCOL.md
 * "Append-only Tables"): only new rows, and rearranging files without changing data, are allowed.
 */
export class AppendOnlyTableError extends TidemarkError {
  constructor(uri: string, operation: string, what: string) {
    super(
      `[delta] table ${uri} is append-only (delta.appendOnly = true): this ${operation} ${what}; ` +
        'only inserts are allowed (load it with target.mode: append, or set delta.appendOnly to false on the table)',
      { kind: 'terminal', context: { uri, setting: 'delta.appendOnly', operation } },
    );
  }
}

/** A concurrent commit changed what this transaction read; retrying blindly would be wrong. */
export class CommitConflictError extends TidemarkError {
  readonly conflict: string;
  constructor(conflict: string, message: string, context: ErrorContext) {
    super(message, { kind: 'conflict', context: { ...context, conflict } });
    this.conflict = conflict;
  }
}

/** Gave up after the configured number of commit attempts. */
export class CommitRetriesExhaustedError extends TidemarkError {}

/** The MERGE input breaks a rule (duplicate key, null key, bad delete condition). */
export class MergeInputError extends TidemarkError {}

/** A schema cannot be mapped or evolved (unsupported type, incompatible change). */
export class SchemaError extends TidemarkError {}

/** A source file could not be read or cast; names the file and, where known, row and column. */
export class BadFileError extends TidemarkError {}

/**
 * A row to be written breaks one of the table's rules (a CHECK constraint, a column invariant, a
 * NOT NULL column). It is bad data like a value that does not cast: it names the rule
 * (`context.constraint`), the source file (`context.key`, so `onBadFile: quarantine` can set the
 * file aside), the row and the key values where known.
 */
export class ConstraintViolationError extends BadFileError {
  readonly constraint: string;
  constructor(message: string, constraint: string, context: ErrorContext) {
    super(message, { kind: 'terminal', context: { ...context, constraint } });
    this.constraint = constraint;
  }
}

/** The machine ran out of a resource a run needs (the spool folder's disk filled up). */
export class ResourceError extends TidemarkError {}

/** Invalid configuration or command-line usage. */
export class ConfigError extends TidemarkError {
  constructor(message: string, context: ErrorContext = {}, cause?: unknown) {
    super(message, { kind: 'usage', context, cause });
  }
}

/** True when retrying the operation may succeed. */
export function isTransient(err: unknown): boolean {
  return err instanceof TidemarkError && err.kind === 'transient';
}

/**
 * A snapshot source's newest extract would delete more of the table's keys than
 * `source.maxDeleteShare` allows (an empty or cut-off extract): nothing is committed; names the counts.
 */
export class SnapshotDeleteRefusedError extends TidemarkError {}

/**
 * A snapshot source's extract in scd2 mode cannot say when its absent keys ended: its as-of
 * column (`source.snapshotAsOf`) is missing, NULL, not one value on every row, or not comparable
 * with orderBy, or the extract is empty. The whole extract is in question (not one file, so never
 * quarantined): nothing is committed; names the file, row and column where one is at fault.
 */
export class SnapshotAsOfError extends TidemarkError {}
