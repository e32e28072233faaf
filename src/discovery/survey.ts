/**
 * What a source looks like, to tell "nothing new" from "nothing there": whether its root exists,
 * whether anything lies in it, and whether the partition layout fits the folders found.
 *
 *   surveySource   (I/O) from the root down, one listing per layout level, descending into the
 *                  newest folder that fits: a few LIST requests, whatever the landing zone's age
 *   judgeLevel     (pure) the verdict on one level's listing: fits, nothing to judge, or a mismatch
 *   describeMismatch (pure) what was expected, what was found, and a hint
 *
 * A run surveys only when its walk found no partition at all (a new landing zone, or the wrong
 * layout); `tidemark validate` and the start of backfill and reset survey every time.
 */
import type { ObjectInfo, Storage } from '../storage/storage.js';
import { UNITS, type Unit, type WallTime } from './calendar.js';
import type { KeyFilter } from './filter.js';
import { isNotData } from './identity.js';
import { Layout } from './layout.js';
import type { LayoutMismatch, SourceSurvey } from './plan.js';

export type { LayoutMismatch, SourceSurvey } from './plan.js';

/** Folder and file names quoted in a finding. */
const SAMPLES = 3;
/** Pages of one level's listing a survey reads before it gives up judging (20 000 entries). */
const MAX_PAGES = 20;

/** Options of `surveySource`. */
export interface SurveyOptions {
  /** The job's include/exclude: a file it leaves out does not count as data found. */
  selects?: KeyFilter;
  signal?: AbortSignal;
}

/** One level's listing, names relative to the source root. */
export interface LevelListing {
  /** Child folders (ending with `/`). */
  folders: readonly string[];
  objects: readonly ObjectInfo[];
}

/** A level's verdict: descend into a folder that fits, nothing to judge (empty), or a mismatch. */
export type LevelVerdict =
  | { descend: { prefix: string; fields: Partial<WallTime> } }
  | { empty: true }
  | { mismatch: LayoutMismatch };

/**
 * Survey `storage` (rooted at the source): the root's kind, whether it is empty, and, with a
 * layout, whether the layout fits the folders along the newest path that fits it.
 */
export async function surveySource(
  storage: Storage,
  layout: Layout | null,
  opts: SurveyOptions = {},
): Promise<SourceSurvey> {
  const survey: SourceSurvey = {
    root: storage.inspectRoot ? await storage.inspectRoot() : 'unknown',
    empty: true,
    mismatch: null,
    listRequests: 0,
  };
  if (survey.root === 'missing' || survey.root === 'file') return survey;
  if (layout === null) {
    // Modification-time discovery: only whether anything is there (one page of one key).
    for await (const page of storage.list({ delimiter: '/', pageSize: 1, signal: opts.signal })) {
      survey.listRequests++;
      survey.empty = page.objects.length + page.commonPrefixes.length === 0;
      break;
    }
    return survey;
  }
  let node: { prefix: string; fields: Partial<WallTime> } = { prefix: '', fields: {} };
  for (let level = 0; level < layout.levels.length; level++) {
    const listing = await listLevel(storage, node.prefix, survey, opts.signal);
    if (listing === null) return survey; // too big to judge: say nothing rather than guess
    if (level === 0) survey.empty = listing.folders.length + listing.objects.length === 0;
    const verdict = judgeLevel(layout, level, node, listing, opts.selects);
    if ('empty' in verdict) return survey;
    if ('mismatch' in verdict) {
      survey.mismatch = verdict.mismatch;
      return survey;
    }
    node = verdict.descend;
  }
  return survey; // a partition folder fits every level
}

/**
 * Judge one level's listing below `parent` (pure): the newest folder that fits the level, or,
 * when none does, a mismatch if folders or data files are there, else nothing to judge.
 * Hidden folders and files (`_`, `.`) and files left out by include/exclude are not counted.
 */
export function judgeLevel(
  layout: Layout,
  level: number,
  parent: { prefix: string; fields: Partial<WallTime> },
  listing: LevelListing,
  selects: KeyFilter = () => true,
): LevelVerdict {
  const nameOf = (prefix: string) => prefix.slice(parent.prefix.length, -1);
  const folders = listing.folders.filter((p) => !isNotData(nameOf(p)));
  const files = listing.objects
    .filter((o) => !isNotData(o.key.slice(parent.prefix.length)) && selects(o.key))
    .map((o) => o.key);
  let newest: { prefix: string; fields: Partial<WallTime> } | null = null;
  const misfits: string[] = [];
  for (const prefix of folders) {
    const match = layout.matchLevel(level, nameOf(prefix), parent.fields);
    if ('reason' in match) misfits.push(prefix);
    else newest = { prefix, fields: match.fields }; // listings are in key order: the last is the newest
  }
  if (newest !== null) return { descend: newest };
  if (misfits.length === 0 && files.length === 0) return { empty: true };
  const template = layout.levels[level]!.template;
  return {
    mismatch: {
      layout: layout.text,
      level,
      template,
      parent: parent.prefix,
      folders: misfits.slice(0, SAMPLES),
      folderCount: misfits.length,
      files: files.slice(0, SAMPLES),
      fileCount: files.length,
      shorterLayout: misfits.length === 0 ? layoutAbove(layout, level) : null,
      levelLooksLike:
        misfits.length > 0 ? templateOf(nameOf(misfits[0]!), unitsAbove(layout, level)) : null,
    },
  };
}

/**
 * The finding in words: what the layout expects where, what is there instead, and a hint.
 * E.g. "layout '{yyyy}/{mm}/{dd}/{HH}' expects folders named like '{HH}' in 2026/11/30/, but
 * found 11 files and no folder (2026/11/30/a.csv, …): the folders stop at the day level; for
 * daily folders use layout '{yyyy}/{mm}/{dd}'".
 */
export function describeMismatch(m: LayoutMismatch): string {
  const where = m.parent === '' ? 'at the source root' : `in ${m.parent}`;
  const found: string[] = [];
  if (m.folderCount > 0)
    found.push(`${count(m.folderCount, 'folder')} (${sample(m.folders, m.folderCount)})`);
  if (m.fileCount > 0)
    found.push(
      `${count(m.fileCount, 'file')}${m.folderCount === 0 ? ' and no folder' : ''} (${sample(m.files, m.fileCount)})`,
    );
  const head = `layout '${m.layout}' matches no partition folder: it expects folders named like '${m.template}' ${where}, but found ${found.join(' and ')}`;
  if (m.levelLooksLike !== null) return `${head}; those look like '${m.levelLooksLike}'`;
  if (m.shorterLayout !== null) {
    const above = unitName(m.shorterLayout);
    return `${head}: the folders stop at the ${above} level; for ${above === 'day' ? 'daily' : `${above}ly`} folders use layout '${m.shorterLayout}'`;
  }
  if (m.level === 0)
    return `${head}: partition discovery reads files in date folders; for files without them use discover.by: modified`;
  return head;
}

async function listLevel(
  storage: Storage,
  prefix: string,
  survey: SourceSurvey,
  signal?: AbortSignal,
): Promise<LevelListing | null> {
  const folders: string[] = [];
  const objects: ObjectInfo[] = [];
  let pages = 0;
  for await (const page of storage.list({ prefix, delimiter: '/', signal })) {
    survey.listRequests++;
    if (++pages > MAX_PAGES) return null;
    folders.push(...page.commonPrefixes);
    objects.push(...page.objects);
  }
  return { folders, objects };
}

/** The layout of the levels above `level`, when those alone make a valid layout. */
function layoutAbove(layout: Layout, level: number): string | null {
  if (level === 0) return null;
  try {
    return Layout.parse(
      layout.levels
        .slice(0, level)
        .map((l) => l.template)
        .join('/'),
    ).text;
  } catch {
    return null;
  }
}

function unitsAbove(layout: Layout, level: number): number {
  return level === 0 ? 0 : layout.levels[level - 1]!.unitsThrough;
}

const WIDTH: Record<Unit, number> = { yyyy: 4, mm: 2, dd: 2, HH: 2 };

/**
 * The template a folder name fits when its numbers are the next units in order (`2026` →
 * `{yyyy}`, `dt=2026-11-30` → `dt={yyyy}-{mm}-{dd}`, `hour=07` after a day → `hour={HH}`); null
 * when it holds no such numbers.
 */
export function templateOf(name: string, unitsNamed: number): string | null {
  let next = unitsNamed;
  let ok = true;
  const template = name.replace(/\d+/g, (digits) => {
    const unit = UNITS[next];
    if (unit === undefined || digits.length !== WIDTH[unit]) {
      ok = false;
      return digits;
    }
    next++;
    return `{${unit}}`;
  });
  return ok && next > unitsNamed ? template : null;
}

/** `day` for a layout ending at {dd}, and so on. */
function unitName(layoutText: string): string {
  const last = [...layoutText.matchAll(/\{(yyyy|mm|dd|HH)\}/g)].at(-1)?.[1];
  return last === 'HH' ? 'hour' : last === 'dd' ? 'day' : last === 'mm' ? 'month' : 'year';
}

function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function sample(names: readonly string[], total: number): string {
  return names.join(', ') + (total > names.length ? ', …' : '');
}
