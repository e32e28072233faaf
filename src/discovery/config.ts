/**
 * Discovery settings of a job (`source.discover` in the YAML), and their resolution into
 * validated settings with defaults applied. The config module validates the YAML shape;
 * this module checks what only discovery understands (layouts, zones, start values).
 */
import { ConfigError } from '../errors.js';
import { parseId, type Granularity } from './calendar.js';
import { compileKeyFilter, type KeyFilter, type KeyFilterConfig } from './filter.js';
import { Layout } from './layout.js';
import { PartitionClock } from './zone.js';

/** What to do with a file whose key was loaded before but whose ETag changed. */
export type OnOverwrite = 'reload' | 'ignore';

/** Settings shared by both modes; `include`/`exclude` are the job's `source.include`/`source.exclude`. */
interface CommonDiscoveryConfig extends KeyFilterConfig {
  /** A partition (or, with `by: modified`, a file) is loadable only once `_SUCCESS` is in its folder. */
  requireSuccessMarker?: boolean;
  /** Default `reload`. */
  onOverwrite?: OnOverwrite;
}

/** Files in time-partitioned folders. */
export interface PartitionDiscoveryConfig extends CommonDiscoveryConfig {
  by: 'partition';
  /** Folder layout, e.g. `{yyyy}/{mm}/{dd}`. */
  layout: string;
  /** Partitions before the watermark rescanned for late files; default 2. */
  lookback?: number;
  /** Partitions behind the lookback window listed to report late files there (never loaded); default 2. */
  lateCheck?: number;
  /** First partition of an initial load: `2026-03-01` or `2026-03-01T05`. */
  start?: string;
  /** IANA zone the folder dates are written in; default UTC. */
  timezone?: string;
}

/** Files anywhere below the prefix, by LastModified. */
export interface ModifiedDiscoveryConfig extends CommonDiscoveryConfig {
  by: 'modified';
  /** Settle window in ms; default 15 minutes. */
  settle?: number;
  /** Oldest LastModified of an initial load: an ISO timestamp with offset, or a date (UTC midnight). */
  start?: string;
  /** Keys sort by time: list only after the newest key found older than the window (./by-modified.ts). */
  incrementalListing?: boolean;
}

/** Files named by S3 event notifications on an SQS queue, with a periodic reconciling listing (./notifications/). */
export interface NotificationDiscoveryConfig extends KeyFilterConfig {
  by: 'notifications';
  /** The SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
  queue: string;
  /** Ms between reconciling listings of the whole prefix (files whose event was lost); default 24 hours. */
  reconcileEvery?: number;
  /** Ms a received message stays hidden from other consumers, extended while the run holds it; default 5 minutes. */
  visibilityTimeout?: number;
  /** Region the queue's requests are signed for; default: from the queue URL's host, else the storage region. */
  region?: string;
  /** Oldest LastModified a reconciling listing loads: an ISO timestamp with offset, or a date (UTC midnight). */
  start?: string;
  /** Default `reload`. */
  onOverwrite?: OnOverwrite;
}

/** `source.discover` of a job. */
export type DiscoveryConfig =
  PartitionDiscoveryConfig | ModifiedDiscoveryConfig | NotificationDiscoveryConfig;

/** Default number of lookback partitions. */
export const DEFAULT_LOOKBACK = 2;
/** Default number of partitions behind the lookback window checked for late files. */
export const DEFAULT_LATE_CHECK = 2;
/** Default settle window: 15 minutes. */
export const DEFAULT_SETTLE_MS = 15 * 60_000;
/** Default time between reconciling listings (notification discovery): 24 hours. */
export const DEFAULT_RECONCILE_EVERY_MS = 24 * 3_600_000;
/** Default visibility timeout of a received message: 5 minutes (a killed run's messages come back that soon). */
export const DEFAULT_VISIBILITY_TIMEOUT_MS = 5 * 60_000;
/** SQS's bounds of a visibility timeout: 1 second (0 would redeliver at once) to 12 hours. */
export const MAX_VISIBILITY_TIMEOUT_MS = 12 * 3_600_000;
/** Default reaction to a file overwritten in place. */
export const DEFAULT_ON_OVERWRITE: OnOverwrite = 'reload';

/** Validated partition-discovery settings. */
export interface PartitionSettings {
  mode: 'partition';
  layout: Layout;
  clock: PartitionClock;
  lookback: number;
  /** Partitions behind the lookback window listed for late files, which are reported, not loaded. */
  lateCheck: number;
  /** First partition id of an initial load, or null for the oldest. */
  start: string | null;
  requireSuccessMarker: boolean;
  onOverwrite: OnOverwrite;
  /** Whether a key is selected by include/exclude. */
  selects: KeyFilter;
}

/** Validated modification-time settings. */
export interface ModifiedSettings {
  mode: 'modified';
  settleMs: number;
  /** Epoch ms of the oldest LastModified an initial load takes, or null for all. */
  start: number | null;
  requireSuccessMarker: boolean;
  onOverwrite: OnOverwrite;
  /** Whether a key is selected by include/exclude. */
  selects: KeyFilter;
  /** Keys sort by time: each run lists only after the state's `listAfter` key. */
  incrementalListing: boolean;
}

/** Validated notification-discovery settings. */
export interface NotificationSettings {
  mode: 'notifications';
  queueUrl: string;
  /** The region named in the config, or null (then the queue URL's, else the storage's). */
  region: string | null;
  reconcileEveryMs: number;
  /** Whole seconds, as SQS takes them. */
  visibilityTimeoutS: number;
  /** Epoch ms of the oldest LastModified a reconciling listing loads, or null for all. */
  start: number | null;
  onOverwrite: OnOverwrite;
  selects: KeyFilter;
  /** Success markers are not a notification concept: always false. */
  requireSuccessMarker: false;
}

/** Validated settings of any mode. */
export type DiscoverySettings = PartitionSettings | ModifiedSettings | NotificationSettings;

/** Apply defaults and validate; throws ConfigError naming the `discover.*` field. */
export function resolveDiscovery(config: DiscoveryConfig): DiscoverySettings {
  const { settings, problems } = checkDiscovery(config);
  if (problems[0]) throw problems[0];
  return settings!;
}

/**
 * Every problem of `config` at once (an invalid layout does not hide an invalid timezone), and the
 * settings when there is none. A start value is checked against the layout only when the layout
 * itself is valid (its granularity decides what a start may be).
 */
export function checkDiscovery(config: DiscoveryConfig): {
  settings: DiscoverySettings | null;
  problems: ConfigError[];
} {
  const problems: ConfigError[] = [];
  const attempt = <T>(check: () => T): T | undefined => {
    try {
      return check();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(err);
      return undefined;
    }
  };
  const onOverwrite = config.onOverwrite ?? DEFAULT_ON_OVERWRITE;
  if (onOverwrite !== 'reload' && onOverwrite !== 'ignore') {
    problems.push(
      new ConfigError(
        `[discovery] onOverwrite must be 'reload' or 'ignore', got ${JSON.stringify(onOverwrite)}`,
        { field: 'discover.onOverwrite' },
      ),
    );
  }
  const selects = attempt(() => compileKeyFilter(config));
  if (config.by === 'notifications')
    return checkNotifications(config, problems, attempt, { onOverwrite, selects });
  const requireSuccessMarker = config.requireSuccessMarker ?? false;
  const done = (settings: DiscoverySettings) => ({
    settings: problems.length === 0 ? settings : null,
    problems,
  });
  if (config.by === 'partition') {
    const layout = attempt(() => Layout.parse(config.layout));
    const clock = attempt(() => new PartitionClock(config.timezone));
    const lookback = config.lookback ?? DEFAULT_LOOKBACK;
    if (!Number.isInteger(lookback) || lookback < 0) {
      problems.push(
        new ConfigError(
          `[discovery] lookback must be a whole number of partitions >= 0, got ${lookback}`,
          { field: 'discover.lookback' },
        ),
      );
    }
    const lateCheck = config.lateCheck ?? DEFAULT_LATE_CHECK;
    if (!Number.isInteger(lateCheck) || lateCheck < 0) {
      problems.push(
        new ConfigError(
          `[discovery] lateCheck must be a whole number of partitions >= 0, got ${lateCheck}`,
          { field: 'discover.lateCheck' },
        ),
      );
    }
    const start =
      config.start === undefined || !layout
        ? null
        : (attempt(() => parsePartitionStart(config.start!, layout.granularity)) ?? null);
    return done({
      mode: 'partition',
      layout: layout!,
      clock: clock!,
      lookback,
      lateCheck,
      start,
      requireSuccessMarker,
      onOverwrite,
      selects: selects!,
    });
  }
  if (config.by === 'modified') {
    const settleMs = config.settle ?? DEFAULT_SETTLE_MS;
    if (!Number.isFinite(settleMs) || settleMs < 0) {
      problems.push(
        new ConfigError(`[discovery] settle must be a duration >= 0, got ${settleMs}`, {
          field: 'discover.settle',
        }),
      );
    }
    const start =
      config.start === undefined
        ? null
        : (attempt(() => parseTimestampStart(config.start!)) ?? null);
    return done({
      mode: 'modified',
      settleMs,
      start,
      requireSuccessMarker,
      onOverwrite,
      selects: selects!,
      incrementalListing: config.incrementalListing ?? false,
    });
  }
  problems.push(
    new ConfigError(
      `[discovery] discover.by must be 'partition', 'modified' or 'notifications', got ${JSON.stringify((config as { by?: unknown }).by)}`,
      { field: 'discover.by' },
    ),
  );
  return { settings: null, problems };
}

/** The notification mode's part of `checkDiscovery` (given the checks every mode shares). */
function checkNotifications(
  config: NotificationDiscoveryConfig,
  problems: ConfigError[],
  attempt: <T>(check: () => T) => T | undefined,
  common: { onOverwrite: OnOverwrite; selects: KeyFilter | undefined },
): { settings: DiscoverySettings | null; problems: ConfigError[] } {
  const { onOverwrite, selects } = common;
  const queueProblem = sqsQueueUrlProblem(config.queue);
  if (queueProblem !== null)
    problems.push(
      new ConfigError(`[discovery] queue ${queueProblem}`, { field: 'discover.queue' }),
    );
  const reconcileEveryMs = config.reconcileEvery ?? DEFAULT_RECONCILE_EVERY_MS;
  if (!Number.isFinite(reconcileEveryMs) || reconcileEveryMs <= 0) {
    problems.push(
      new ConfigError(
        `[discovery] reconcileEvery must be a duration > 0 (a listing every run is discover.by: modified), got ${reconcileEveryMs}`,
        { field: 'discover.reconcileEvery' },
      ),
    );
  }
  const visibility = config.visibilityTimeout ?? DEFAULT_VISIBILITY_TIMEOUT_MS;
  if (!Number.isFinite(visibility) || visibility < 1000 || visibility > MAX_VISIBILITY_TIMEOUT_MS) {
    problems.push(
      new ConfigError(
        `[discovery] visibilityTimeout must be between 1s and 12h (SQS's bounds), got ${visibility} ms`,
        { field: 'discover.visibilityTimeout' },
      ),
    );
  }
  if (config.region !== undefined && !/^[a-z]{2}(-[a-z0-9]+)+-\d+$/.test(config.region)) {
    problems.push(
      new ConfigError(
        `[discovery] region ${JSON.stringify(config.region)} is not an AWS region name (such as eu-west-1)`,
        { field: 'discover.region' },
      ),
    );
  }
  const start =
    config.start === undefined ? null : (attempt(() => parseTimestampStart(config.start!)) ?? null);
  const settings: NotificationSettings = {
    mode: 'notifications',
    queueUrl: config.queue,
    region: config.region ?? null,
    reconcileEveryMs,
    visibilityTimeoutS: Math.ceil(visibility / 1000),
    start,
    onOverwrite,
    selects: selects!,
    requireSuccessMarker: false,
  };
  return { settings: problems.length === 0 ? settings : null, problems };
}

/**
 * Why `url` is not an SQS queue URL, or null when it is one: http(s), a path of exactly
 * `/<account>/<queue name>` (SQS's form; an ARN or a bare name is the usual mistake).
 */
export function sqsQueueUrlProblem(url: string): string | null {
  if (url.startsWith('arn:'))
    return `${JSON.stringify(url)} is an ARN; give the queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>)`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${JSON.stringify(url)} is not a URL; give the queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>)`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return `${JSON.stringify(url)} is not an http(s) URL`;
  if (parsed.username !== '' || parsed.password !== '')
    return 'must not carry credentials (they come from the AWS chain)';
  if (parsed.search !== '' || parsed.hash !== '')
    return `${JSON.stringify(url)} has a query or fragment; a queue URL has neither`;
  if (!/^\/[^/]+\/[A-Za-z0-9_-]{1,80}(\.fifo)?$/.test(parsed.pathname)) {
    return `${JSON.stringify(url)} does not end in /<account>/<queue name> as an SQS queue URL does`;
  }
  return null;
}

const PARTITION_START = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2})(?::00(?::00)?)?)?$/;

/** `2026-03-01` or `2026-03-01T05` (`T05:00`, `T05:00:00`) as a partition id of `granularity`. */
export function parsePartitionStart(text: string, granularity: Granularity): string {
  const fail = (why: string) =>
    new ConfigError(`[discovery] start ${JSON.stringify(text)} ${why}`, {
      field: 'discover.start',
    });
  const m = PARTITION_START.exec(text);
  if (!m)
    throw fail(
      'is not a partition date (expected YYYY-MM-DD, or YYYY-MM-DDTHH for hourly layouts)',
    );
  if (m[2] !== undefined && granularity === 'day')
    throw fail('names an hour but the layout has day partitions');
  const id = granularity === 'hour' ? `${m[1]}T${m[2] ?? '00'}` : m[1]!;
  if (!parseId(id)) throw fail('is not a real date');
  return id;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO timestamp with an offset, or a date (UTC midnight), as epoch ms. */
export function parseTimestampStart(text: string): number {
  const ms = DATE_ONLY.test(text) || WITH_OFFSET.test(text) ? Date.parse(text) : NaN;
  // Date.parse rolls 2026-02-30 over to March; refuse impossible dates instead.
  if (Number.isNaN(ms) || !parseId(text.slice(0, 10))) {
    throw new ConfigError(
      `[discovery] start ${JSON.stringify(text)} is not a timestamp (expected e.g. 2026-03-01T00:00:00Z or 2026-03-01)`,
      { field: 'discover.start' },
    );
  }
  return ms;
}
