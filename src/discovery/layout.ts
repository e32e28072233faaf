/**
 * Partition layouts: folder templates such as `{yyyy}/{mm}/{dd}`, `{yyyy}/{mm}/{dd}/{HH}`
 * or `dt={yyyy}-{mm}-{dd}/hour={HH}`. Placeholders are fixed-width numbers inside literal
 * text; `/` separates folder levels.
 *
 * A layout must name year, month and day (and optionally the hour) in that order, so that
 * folder names sort in time order: that is what lets a run list only the partitions
 * after its watermark (S3 StartAfter) instead of the whole landing zone.
 */
import { ConfigError } from '../errors.js';
import {
  ID_LENGTH_BY_UNITS,
  UNITS,
  formatId,
  impossibleDate,
  parseId,
  type Granularity,
  type Unit,
  type WallTime,
} from './calendar.js';

const WIDTH: Record<Unit, number> = { yyyy: 4, mm: 2, dd: 2, HH: 2 };
const FIELD: Record<Unit, keyof WallTime> = { yyyy: 'year', mm: 'month', dd: 'day', HH: 'hour' };

/** One folder level of a layout. */
export interface LayoutLevel {
  /** The level's template text, e.g. `dt={yyyy}-{mm}-{dd}`. */
  readonly template: string;
  /** Placeholders in this level, in order. */
  readonly units: readonly Unit[];
  /** How many units the levels above (and this one) name: the id length known below it. */
  readonly unitsThrough: number;
  /** Literal text and placeholders in order. */
  readonly parts: readonly Part[];
  /** Anchored matcher for a folder name at this level (null for a literal-only level). */
  readonly pattern: RegExp | null;
}

/** A piece of a level's template: literal text or a placeholder. */
export type Part = { literal: string } | { unit: Unit };

/** A level's verdict on a folder name: the fields it names, or why it is skipped. */
export type LevelMatch = { fields: Partial<WallTime> } | { reason: string };

/** A parsed, validated layout. */
export class Layout {
  readonly text: string;
  readonly granularity: Granularity;
  readonly levels: readonly LayoutLevel[];

  private constructor(text: string, levels: LayoutLevel[]) {
    this.text = text;
    this.levels = levels;
    this.granularity = levels.some((l) => l.units.includes('HH')) ? 'hour' : 'day';
  }

  /** Parse and validate a layout; throws ConfigError (field `discover.layout`) naming the problem. */
  static parse(text: string): Layout {
    const clean = text.endsWith('/') ? text.slice(0, -1) : text;
    const fail = (why: string) =>
      new ConfigError(`[discovery] invalid layout ${JSON.stringify(text)}: ${why}`, {
        field: 'discover.layout',
      });
    if (clean === '') throw fail('it is empty');
    const levels: LayoutLevel[] = [];
    const seen: Unit[] = [];
    for (const template of clean.split('/')) {
      if (template === '')
        throw fail('it has an empty folder level (leading, trailing or double `/`)');
      const parts = tokenize(template, fail);
      for (const unit of unitsOf(parts)) {
        if (seen.includes(unit)) throw fail(`{${unit}} appears twice`);
        const expected = UNITS[seen.length]!;
        if (unit !== expected) {
          throw fail(
            seen.length === 0
              ? `it must start with {yyyy} before {${unit}}`
              : `{${unit}} needs {${expected}} before it (units go from year down to hour, so folders sort in time order)`,
          );
        }
        seen.push(unit);
      }
      levels.push(makeLevel(template, parts, seen.length));
    }
    if (seen.length < 3) throw fail('it must name at least {yyyy}, {mm} and {dd}');
    return new Layout(text, levels);
  }

  /** Folder prefix of partition `id`, ending with `/` (`2026/03/05/`). */
  prefixOf(id: string): string {
    const t = parseId(id);
    if (!t) throw new Error(`[discovery] not a partition id: ${JSON.stringify(id)}`);
    return this.levels.map((l) => formatLevel(l, t)).join('/') + '/';
  }

  /** The folder name a level takes for the wall time `t`. */
  formatLevel(index: number, t: WallTime): string {
    return formatLevel(this.levels[index]!, t);
  }

  /**
   * Match a folder name at level `index`, given the fields named by the levels above.
   * Returns all fields known so far, or why the folder is skipped.
   */
  matchLevel(index: number, name: string, above: Partial<WallTime>): LevelMatch {
    const level = this.levels[index]!;
    if (level.pattern === null) {
      return name === level.template
        ? { fields: above }
        : { reason: `does not match layout level '${level.template}'` };
    }
    const m = level.pattern.exec(name);
    if (!m) return { reason: `does not match layout level '${level.template}'` };
    const fields: Partial<WallTime> = { ...above };
    level.units.forEach((unit, i) => {
      fields[FIELD[unit]] = Number(m[i + 1]);
    });
    const impossible = impossibleDate(fields);
    return impossible ? { reason: `impossible date: ${impossible}` } : { fields };
  }

  /**
   * The partition id a folder path names (`2026/03/05/` -> `2026-03-05`), or why it is
   * not a partition folder of this layout.
   */
  parsePrefix(prefix: string): { id: string } | { reason: string } {
    const names = (prefix.endsWith('/') ? prefix.slice(0, -1) : prefix).split('/');
    if (names.length !== this.levels.length)
      return { reason: `does not have the ${this.levels.length} levels of '${this.text}'` };
    let fields: Partial<WallTime> = {};
    for (let i = 0; i < names.length; i++) {
      const match = this.matchLevel(i, names[i]!, fields);
      if ('reason' in match) return match;
      fields = match.fields;
    }
    return { id: formatId(fields as WallTime) };
  }
}

/** The id of fields named so far, truncated to the units known (`2026-03` after year and month). */
export function partialId(fields: Partial<WallTime>, unitCount: number): string {
  const full = formatId({
    year: fields.year ?? 0,
    month: fields.month ?? 1,
    day: fields.day ?? 1,
    hour: fields.hour ?? 0,
  });
  return full.slice(0, ID_LENGTH_BY_UNITS[unitCount]);
}

function tokenize(template: string, fail: (why: string) => ConfigError): Part[] {
  const parts: Part[] = [];
  let rest = template;
  while (rest !== '') {
    const open = rest.indexOf('{');
    const literal = open < 0 ? rest : rest.slice(0, open);
    if (literal.includes('}')) throw fail(`unbalanced '}' in '${template}'`);
    if (literal !== '') parts.push({ literal });
    if (open < 0) break;
    const close = rest.indexOf('}', open);
    if (close < 0) throw fail(`unbalanced '{' in '${template}'`);
    const name = rest.slice(open + 1, close);
    if (!(UNITS as readonly string[]).includes(name)) {
      throw fail(`unknown placeholder {${name}} (known: ${UNITS.map((u) => `{${u}}`).join(', ')})`);
    }
    parts.push({ unit: name as Unit });
    rest = rest.slice(close + 1);
  }
  return parts;
}

function makeLevel(template: string, parts: Part[], unitsThrough: number): LayoutLevel {
  const units = unitsOf(parts);
  const source = parts
    .map((p) =>
      'unit' in p ? `(\\d{${WIDTH[p.unit]}})` : p.literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('');
  const pattern = units.length === 0 ? null : new RegExp(`^${source}$`);
  return { template, units, unitsThrough, parts, pattern };
}

function formatLevel(level: LayoutLevel, t: WallTime): string {
  return level.parts
    .map((p) =>
      'unit' in p ? String(t[FIELD[p.unit]] ?? 0).padStart(WIDTH[p.unit], '0') : p.literal,
    )
    .join('');
}

function unitsOf(parts: readonly Part[]): Unit[] {
  return parts.flatMap((p) => ('unit' in p ? [p.unit] : []));
}
