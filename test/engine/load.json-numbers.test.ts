/**
 * JSON numbers (./src/engine/json-numbers.ts), a property over real NDJSON and gzip files read by
 * real DuckDB: random integers (up to 25 digits), decimals (up to 20 significant digits) and
 * exponents, in a new table and in an existing one of BIGINT, DECIMAL(38,10) and DOUBLE columns:
 * every value is stored as exactly the number the file spells (a double column: the double of
 * that number, when it holds at most 15 significant digits), or the batch is refused naming the
 * file, the line and the column. Never a value that changed on the way in.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StructType } from '../../src/delta/schema.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { loadSourceFiles, type LoadFile } from '../../src/engine/load.js';
import { BadFileError } from '../../src/errors.js';

let session: DuckSession;
let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-json-numbers-'));
  session = await DuckSession.open({ threads: 1 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const integer = fc.tuple(fc.boolean(), digits(1, 25)).map(([neg, d]) => `${neg ? '-' : ''}${d.replace(/^0+(?=.)/, '')}`);
const decimal = fc.tuple(integer, digits(1, 12)).map(([w, f]) => `${w}.${f}`);
const exponent = fc.tuple(fc.oneof(integer, decimal), fc.integer({ min: -30, max: 30 })).map(([m, e]) => `${m}e${e}`);
const number = fc.oneof(integer, decimal, exponent);
const COLUMNS = ['a', 'b', 'c'];
const rowsArb = fc.array(fc.tuple(...COLUMNS.map(() => fc.option(number, { nil: null, freq: 6 }))), { minLength: 1, maxLength: 5 });

async function ndjson(rows: (string | null)[][], gzip: boolean): Promise<LoadFile> {
  const text = rows.map((r) => `{${r.map((v, i) => `"${COLUMNS[i]}":${v ?? 'null'}`).join(', ')}}`).join('\n') + '\n';
  const path = join(dir, `f${n++}.ndjson${gzip ? '.gz' : ''}`);
  await writeFile(path, gzip ? gzipSync(text) : text);
  return { localPath: path, key: `landing/${path.split('/').pop()}`, lastModified: new Date('2026-11-01T00:00:00Z'), format: 'ndjson' };
}

/** The exact value of a number's text, as a fraction of two BigInts scaled to a common exponent. */
function exact(text: string): { digits: bigint; exp: number } {
  const [m = '', e = '0'] = text.toLowerCase().split('e');
  const [w = '', f = ''] = m.split('.');
  return { digits: BigInt(`${w}${f}`), exp: Number(e) - f.length };
}

function sameNumber(a: string, b: string): boolean {
  const x = exact(a);
  const y = exact(b);
  const exp = Math.min(x.exp, y.exp);
  return x.digits * 10n ** BigInt(x.exp - exp) === y.digits * 10n ** BigInt(y.exp - exp);
}

/** Whether `stored` (as DuckDB prints it) is the value `spelled`, for a column of `type`. */
function holds(type: string, spelled: string, stored: string): boolean {
  if (type === 'DOUBLE' || type === 'FLOAT') return Number(stored) === Number(spelled);
  return sameNumber(spelled, stored);
}

async function check(rows: (string | null)[][], gzip: boolean, schema?: StructType): Promise<void> {
  const file = await ndjson(rows, gzip);
  const err = await loadSourceFiles(session, [file], { table: 't', ...(schema ? { schema } : {}) }).then(
    () => null,
    (e: unknown) => e,
  );
  if (err !== null) {
    if (!(err instanceof BadFileError)) throw err;
    // Refused: it names the file, and, when a number is at fault, its line and column.
    expect(err.context['key']).toBe(file.key);
    if (err.context['value'] !== undefined) {
      const line = err.context['line'] as number;
      const column = COLUMNS.indexOf(err.context['column'] as string);
      expect(rows[line - 1]![column]).toBe(err.context['value']);
    }
    return;
  }
  const types = new Map((await session.all(`DESCRIBE t`)).map((r) => [String(r['column_name']), String(r['column_type'])]));
  const stored = await session.allJson(`SELECT ${COLUMNS.map((c) => `CAST(${c} AS VARCHAR) AS ${c}`).join(', ')} FROM t ORDER BY _source_row`);
  rows.forEach((r, i) =>
    r.forEach((v, j) => {
      const got = stored[i]![COLUMNS[j]!];
      if (v === null) return expect(got).toBeNull();
      expect(holds(types.get(COLUMNS[j]!) ?? '?', v, String(got)), `${COLUMNS[j]} = ${v} stored as ${String(got)} (${types.get(COLUMNS[j]!)})`).toBe(true);
    }),
  );
}

const TABLE: StructType = {
  type: 'struct',
  fields: [
    { name: 'a', type: 'long', nullable: true, metadata: {} },
    { name: 'b', type: 'decimal(38,10)', nullable: true, metadata: {} },
    { name: 'c', type: 'double', nullable: true, metadata: {} },
  ],
};

describe('JSON numbers are stored exactly as written, or refused naming file, line and column', () => {
  it('into a new table (types as DuckDB infers them)', async () => {
    await fc.assert(fc.asyncProperty(rowsArb, fc.boolean(), (rows, gzip) => check(rows, gzip)), { numRuns: 60, seed: 1820 });
  });

  it('into a table of BIGINT, DECIMAL(38,10) and DOUBLE columns', async () => {
    await fc.assert(fc.asyncProperty(rowsArb, fc.boolean(), (rows, gzip) => check(rows, gzip, TABLE)), { numRuns: 60, seed: 1821 });
  });
});
