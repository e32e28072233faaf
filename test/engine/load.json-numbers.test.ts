/**
 * JSON numbers (./src/engine/json-numbers.ts), a property over real NDJSON files, plain, gzip and
 * zstd (written by DuckDB: Node 20 has no zstd), read by real DuckDB: random integers (up to 25 digits), decimals (up to 20 significant digits) and
 * exponents, in a new table and in an existing one of BIGINT, DECIMAL(38,10) and DOUBLE columns:
 * every value is stored as exactly the number the file spells (a double column: the double of
 * that number, when it holds at most 15 significant digits), or the batch is refused naming the
 * file, the line and the column. Never a value that changed on the way in. Into string columns
 * (./src/engine/json-texts.ts) every number, boolean, object and array is stored as the text the
 * file spells, and a JSON string as its value, in whatever mix.
 */
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
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

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const integer = fc
  .tuple(fc.boolean(), digits(1, 25))
  .map(([neg, d]) => `${neg ? '-' : ''}${d.replace(/^0+(?=.)/, '')}`);
const decimal = fc.tuple(integer, digits(1, 12)).map(([w, f]) => `${w}.${f}`);
const exponent = fc
  .tuple(fc.oneof(integer, decimal), fc.integer({ min: -30, max: 30 }))
  .map(([m, e]) => `${m}e${e}`);
const number = fc.oneof(integer, decimal, exponent);
const COLUMNS = ['a', 'b', 'c'];
const rowsArb = fc.array(
  fc.tuple(...COLUMNS.map(() => fc.option(number, { nil: null, freq: 6 }))),
  { minLength: 1, maxLength: 5 },
);

type Compression = 'none' | 'gzip' | 'zstd';
const compression = fc.constantFrom<Compression>('none', 'gzip', 'zstd');

async function ndjson(rows: (string | null)[][], compressed: Compression): Promise<LoadFile> {
  const text =
    rows
      .map((r) => `{${r.map((v, i) => `"${COLUMNS[i]}":${v ?? 'null'}`).join(', ')}}`)
      .join('\n') + '\n';
  const plain = join(dir, `f${n++}.ndjson`);
  await writeFile(plain, compressed === 'gzip' ? gzipSync(text) : text);
  let path = compressed === 'gzip' ? `${plain}.gz` : plain;
  if (compressed === 'gzip') await rename(plain, path);
  if (compressed === 'zstd') {
    // The lines as one-column CSV rows, never quoted (JSON text holds no raw \x01).
    path = `${plain}.zst`;
    await session.run(
      `COPY (SELECT l FROM read_csv('${plain}', columns = {'l': 'VARCHAR'}, delim = chr(1), quote = '', escape = '', header = false)) ` +
        `TO '${path}' (FORMAT csv, DELIMITER chr(1), QUOTE '', ESCAPE '', HEADER false, COMPRESSION zstd)`,
    );
    await rm(plain);
  }
  return {
    localPath: path,
    key: `landing/${path.split('/').pop()}`,
    lastModified: new Date('2026-11-01T00:00:00Z'),
    format: 'ndjson',
  };
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

async function check(
  rows: (string | null)[][],
  compressed: Compression,
  schema?: StructType,
): Promise<void> {
  const file = await ndjson(rows, compressed);
  const err = await loadSourceFiles(session, [file], {
    table: 't',
    ...(schema ? { schema } : {}),
  }).then(
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
  const types = new Map(
    (await session.all(`DESCRIBE t`)).map((r) => [
      String(r['column_name']),
      String(r['column_type']),
    ]),
  );
  const stored = await session.allJson(
    `SELECT ${COLUMNS.map((c) => `CAST(${c} AS VARCHAR) AS ${c}`).join(', ')} FROM t ORDER BY _source_row`,
  );
  rows.forEach((r, i) =>
    r.forEach((v, j) => {
      const got = stored[i]![COLUMNS[j]!];
      if (v === null) return expect(got).toBeNull();
      expect(
        holds(types.get(COLUMNS[j]!) ?? '?', v, String(got)),
        `${COLUMNS[j]} = ${v} stored as ${String(got)} (${types.get(COLUMNS[j]!)})`,
      ).toBe(true);
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
    await fc.assert(
      fc.asyncProperty(rowsArb, compression, (rows, c) => check(rows, c)),
      { numRuns: 60, seed: 1820 },
    );
  });

  it('into a table of BIGINT, DECIMAL(38,10) and DOUBLE columns', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, compression, (rows, c) => check(rows, c, TABLE)),
      { numRuns: 60, seed: 1821 },
    );
  });
});

describe('numbers outside what a double holds are refused saying which way', () => {
  it.each([
    ['1e400', "beyond a double's range"],
    ['5e-324', "smaller than a double's smallest normal value"],
    ['1e-400', "smaller than a double's smallest normal value"],
  ])('%s', async (value, why) => {
    const file = await ndjson(
      [
        ['1', '2', '3'],
        ['4', value, '6'],
      ],
      'none',
    );
    const err = await loadSourceFiles(session, [file], { table: 't' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: file.key,
      line: 2,
      column: 'b',
      value,
    });
    expect((err as Error).message).toContain(why);
  });
});

const TEXT_TABLE: StructType = {
  type: 'struct',
  fields: COLUMNS.map((name) => ({ name, type: 'string', nullable: true, metadata: {} })),
};

/** A JSON value as the file spells it, and the text a string column must store for it. */
const jsonText = fc.oneof(
  number.map((v) => ({ json: v, stored: v })),
  fc.constantFrom('true', 'false').map((v) => ({ json: v, stored: v })),
  fc.string({ maxLength: 6 }).map((v) => ({ json: JSON.stringify(v), stored: v })),
  fc
    .tuple(number, fc.boolean())
    .map(([v, list]) => (list ? `[${v}, "x" ,true]` : `{"k": ${v},"n" :null}`))
    .map((v) => ({ json: v, stored: v })),
);
const textRowsArb = fc.array(
  fc.tuple(...COLUMNS.map(() => fc.option(jsonText, { nil: null, freq: 6 }))),
  { minLength: 1, maxLength: 5 },
);

/** Load `files` (of rows of jsonText values, all of one batch) and check every stored value is the file's text. */
async function checkTexts(
  files: { json: string; stored: string }[][][],
  compressed: Compression,
  schema?: StructType,
): Promise<void> {
  const loaded = [];
  for (const rows of files)
    loaded.push(
      await ndjson(
        rows.map((r) => r.map((v) => v.json)),
        compressed,
      ),
    );
  const err = await loadSourceFiles(session, loaded, {
    table: 't',
    ...(schema ? { schema } : {}),
  }).then(
    () => null,
    (e: unknown) => e,
  );
  if (err !== null) {
    // Refused (only where the column's type is not known before the read): the value, where it stands.
    if (schema || !(err instanceof BadFileError)) throw err;
    const f = loaded.findIndex((l) => l.key === err.context['key']);
    const line = files[f]![(err.context['line'] as number) - 1]!;
    expect(line.map((v) => v.json).join(' ')).toContain(String(err.context['value']));
    return;
  }
  const stored = await session.allJson(
    `SELECT ${COLUMNS.join(', ')} FROM t ORDER BY _source_file, _source_row`,
  );
  const expected = files.flatMap((rows) =>
    rows.map((r) => Object.fromEntries(r.map((v, i) => [COLUMNS[i]!, v.stored]))),
  );
  expect(stored).toEqual(expected);
}

const present = (v: { json: string; stored: string } | null) =>
  v ?? { json: 'null', stored: null as unknown as string };
const filesArb = fc.array(
  textRowsArb.map((rows) => rows.map((r) => r.map(present))),
  { minLength: 1, maxLength: 3 },
);

describe('JSON values into string columns are stored as the file spells them', () => {
  it('numbers, booleans, texts, objects and arrays, in any mix and in several files, into a table of string columns', async () => {
    await fc.assert(
      fc.asyncProperty(filesArb, compression, (files, c) => checkTexts(files, c, TEXT_TABLE)),
      { numRuns: 40, seed: 1822 },
    );
  });

  it('into a new table whose columns are text because one file holds texts there (or refused naming the value, where a number with more digits than a double holds is read before the type is known)', async () => {
    const texts = [COLUMNS.map((c) => ({ json: JSON.stringify(`t-${c}`), stored: `t-${c}` }))];
    await fc.assert(
      fc.asyncProperty(filesArb, compression, (files, c) => checkTexts([texts, ...files], c)),
      { numRuns: 40, seed: 1823 },
    );
  });
});
