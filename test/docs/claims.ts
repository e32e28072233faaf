/**
 * The claims the docs make, found by their markers, and how a claim is compared with what tidemark
 * does (test/docs/claims.test.ts runs them).
 *
 * A claim is marked with an HTML comment, invisible once rendered:
 * - `<!-- claim: NAME -->` on the line before a fenced code block: the block is the claim, a
 *   transcript (`$ tidemark …` lines and what they print) or a message, JSON object or output;
 * - `<!-- claim: NAME -->` inside a table row: the row's first code span is the claim, a message as
 *   it starts (`<placeholders>` stand for any text), and the exit code the section's heading names
 *   (`## Exit 2: …`) is part of it.
 *
 * Comparing: both texts lose what changes from run to run (times, durations, run ids, trailing
 * blanks); in the docs `…` stands for any text. JSON claims are compared without the whitespace
 * outside strings, so a pretty-printed block matches the one line tidemark prints.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export interface Claim {
  name: string;
  /** Path relative to the repository root. */
  file: string;
  /** 1-based line of the marker. */
  line: number;
  kind: 'block' | 'row';
  /** The block's text, or the row's first code span. */
  text: string;
  /** The `##` heading the claim is under. */
  section: string;
  /** The exit code that heading names (`Exit 2: …`), if any. */
  exit: number | null;
}

const MARKER = /<!--\s*claim:\s*([\w.-]+)\s*-->/;

/** Every claim in README.md and docs/*.md of the repository at `root`. */
export async function readClaims(root: string): Promise<Claim[]> {
  const files = [
    'README.md',
    ...(await readdir(path.join(root, 'docs')))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ];
  const claims: Claim[] = [];
  for (const file of files)
    claims.push(...claimsOf(file, await readFile(path.join(root, file), 'utf8')));
  return claims;
}

/** The claims of one Markdown text. */
export function claimsOf(file: string, text: string): Claim[] {
  const lines = text.split('\n');
  const claims: Claim[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^##\s/.test(line)) section = line.replace(/^#+\s*/, '');
    const m = MARKER.exec(line);
    if (!m) continue;
    const exit = /\bExit (\d+)\b/.exec(section);
    const base = { name: m[1]!, file, line: i + 1, section, exit: exit ? Number(exit[1]) : null };
    if (line.trimStart().startsWith('|')) {
      const span = /`([^`]+)`/.exec(line);
      if (!span) throw new Error(`${file}:${i + 1}: claim ${m[1]} marks a row without a code span`);
      claims.push({ ...base, kind: 'row', text: span[1]! });
      continue;
    }
    const fence = lines[i + 1];
    if (fence === undefined || !fence.startsWith('```'))
      throw new Error(`${file}:${i + 1}: claim ${m[1]} is not followed by a code block`);
    const end = lines.findIndex((l, j) => j > i + 1 && l.startsWith('```'));
    if (end < 0) throw new Error(`${file}:${i + 1}: the code block of claim ${m[1]} is not closed`);
    claims.push({ ...base, kind: 'block', text: lines.slice(i + 2, end).join('\n') });
  }
  return claims;
}

/** What changes from run to run, replaced by a name. */
function steady(text: string): string {
  return text
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\b\d+(\.\d+)?(ms|s)\b/g, '<duration>')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();
}

/** `text` without the whitespace outside JSON string literals. */
function compactJson(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (!/\s/.test(c)) out += c;
  }
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export interface MatchOptions {
  /** Compare as JSON (whitespace outside strings ignored). */
  json?: boolean;
  /** `<placeholders>` in the doc stand for any text (table rows). */
  placeholders?: boolean;
  /** The doc shows how the text starts, not all of it (table rows: "message starts with"). */
  prefix?: boolean;
}

/** The regular expression the doc's text stands for. */
export function docPattern(doc: string, opts: MatchOptions = {}): RegExp {
  let text = steady(doc);
  if (opts.json) text = compactJson(text);
  const wild = opts.placeholders ? /…|<[a-z][\w ./-]*>/g : /…/g;
  let source = '';
  let at = 0;
  for (const m of text.matchAll(wild)) {
    source +=
      escape(text.slice(at, m.index)) +
      (m[0] === '<time>' || m[0] === '<uuid>' || m[0] === '<duration>'
        ? escape(m[0])
        : '[\\s\\S]*?');
    at = m.index + m[0].length;
  }
  source += escape(text.slice(at));
  return new RegExp(`^${source}${opts.prefix ? '' : '$'}`);
}

/** Null when `actual` is what the doc says; else a description of the difference. */
export function mismatch(doc: string, actual: string, opts: MatchOptions = {}): string | null {
  let text = steady(actual);
  if (opts.json) text = compactJson(text);
  if (docPattern(doc, opts).test(text)) return null;
  return `the docs say:\n${steady(doc)}\n\ntidemark says:\n${text}`;
}
