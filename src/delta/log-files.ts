/**
 * Names of the files in `_delta_log/`. Only exact matches count: hidden Hadoop checksums,
 * `.tmp/` commits, sidecars, staged commits and other junk classify as null and are ignored.
 */

/** The log folder, relative to the table root, with its trailing slash. */
export const LOG_DIR = '_delta_log/';

/** The folder of V2 checkpoints' sidecar files, relative to the table root, with its trailing slash. */
export const SIDECAR_DIR = `${LOG_DIR}_sidecars/`;

/** Key of the last-checkpoint pointer, relative to the table root. */
export const LAST_CHECKPOINT_KEY = `${LOG_DIR}_last_checkpoint`;

/** A recognised file in `_delta_log/` (never in a subfolder). */
export type LogFile =
  | { kind: 'commit'; version: number; name: string }
  | { kind: 'checkpoint'; version: number; name: string }
  | { kind: 'checkpoint-part'; version: number; part: number; parts: number; name: string }
  | {
      kind: 'checkpoint-v2';
      version: number;
      uuid: string;
      format: 'json' | 'parquet';
      name: string;
    }
  | { kind: 'checksum'; version: number; name: string }
  | { kind: 'compaction'; from: number; to: number; name: string }
  | { kind: 'last-checkpoint'; name: string };

const V = '(\\d{20})';
const UUID = '([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})';
const COMMIT = new RegExp(`^${V}\\.json$`);
const CHECKPOINT = new RegExp(`^${V}\\.checkpoint\\.parquet$`);
const CHECKPOINT_PART = new RegExp(`^${V}\\.checkpoint\\.(\\d{10})\\.(\\d{10})\\.parquet$`);
const CHECKPOINT_V2 = new RegExp(`^${V}\\.checkpoint\\.${UUID}\\.(json|parquet)$`);
const CHECKSUM = new RegExp(`^${V}\\.crc$`);
const COMPACTION = new RegExp(`^${V}\\.${V}\\.compacted\\.json$`);
const SINGLE_VERSION: Array<[RegExp, 'commit' | 'checksum' | 'checkpoint']> = [
  [COMMIT, 'commit'],
  [CHECKSUM, 'checksum'],
  [CHECKPOINT, 'checkpoint'],
];

/** A 20-digit version as a number, or null when it does not fit a safe integer. */
function versionOf(digits: string | undefined): number | null {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * Classify a file name inside `_delta_log/` (the bare name, without folder).
 * Returns null for anything that is not an exact match of a log file pattern.
 */
export function classifyLogFile(name: string): LogFile | null {
  if (name === '_last_checkpoint') return { kind: 'last-checkpoint', name };
  for (const [pattern, kind] of SINGLE_VERSION) {
    const m = pattern.exec(name);
    if (!m) continue;
    const version = versionOf(m[1]);
    return version === null ? null : ({ kind, version, name } as LogFile);
  }
  let m: RegExpExecArray | null;
  if ((m = CHECKPOINT_PART.exec(name))) return checkpointPart(m, name);
  if ((m = CHECKPOINT_V2.exec(name))) {
    const version = versionOf(m[1]);
    if (version === null) return null;
    return {
      kind: 'checkpoint-v2',
      version,
      uuid: m[2]!,
      format: m[3] as 'json' | 'parquet',
      name,
    };
  }
  if ((m = COMPACTION.exec(name))) {
    const from = versionOf(m[1]);
    const to = versionOf(m[2]);
    if (from === null || to === null || from >= to) return null;
    return { kind: 'compaction', from, to, name };
  }
  return null;
}

function checkpointPart(m: RegExpExecArray, name: string): LogFile | null {
  const version = versionOf(m[1]);
  const part = Number(m[2]);
  const parts = Number(m[3]);
  // Part numbers run 1..parts; anything else is not a valid multi-part name.
  if (version === null || parts < 1 || part < 1 || part > parts) return null;
  return { kind: 'checkpoint-part', version, part, parts, name };
}

/**
 * Classify a storage key relative to the table root (`_delta_log/<name>`).
 * Keys in subfolders (`_delta_log/.tmp/`, `_sidecars/`, `_staged_commits/`, `_commits/`) are null.
 */
export function classifyLogKey(key: string): LogFile | null {
  if (!key.startsWith(LOG_DIR)) return null;
  const name = key.slice(LOG_DIR.length);
  if (name.includes('/')) return null;
  return classifyLogFile(name);
}

/** A version zero-padded to 20 digits, as in every log file name. */
export function padVersion(version: number): string {
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new RangeError(`[delta] invalid table version: ${version}`);
  }
  return String(version).padStart(20, '0');
}

/** Name of the commit file for a version: `00000000000000000007.json`. */
export function versionFileName(version: number): string {
  return `${padVersion(version)}.json`;
}

/** Name of the classic (V1, single-file) checkpoint for a version. */
export function checkpointFileName(version: number): string {
  return `${padVersion(version)}.checkpoint.parquet`;
}

/** Key (relative to the table root) of the commit file for a version. */
export function commitKey(version: number): string {
  return LOG_DIR + versionFileName(version);
}

/** Key (relative to the table root) of the classic checkpoint for a version. */
export function checkpointKey(version: number): string {
  return LOG_DIR + checkpointFileName(version);
}

/** Name of a UUID-named (V2) checkpoint for a version. */
export function v2CheckpointFileName(
  version: number,
  uuid: string,
  format: 'json' | 'parquet',
): string {
  return `${padVersion(version)}.checkpoint.${uuid}.${format}`;
}
