/**
 * Properties of loading (../../src/engine/load.ts) with real DuckDB and real files: generated
 * CSV, NDJSON and Parquet files of random values of every scalar type are loaded into a table's
 * types (and, for CSV, into the types inferred for a new table), and what is stored is exactly
 * what the file holds; a text that does not spell a value of its column's type is refused
 * (BadFileError naming the column), never stored changed. Seeded: a failure prints the seed and
 * the shrunk files.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StructType } from '../../src/delta/schema.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { loadSourceFiles, type LoadFile } from '../../src/engine/load.js';
import { ident, str } from '../../src/engine/sql.js';
import { BadFileError } from '../../src/errors.js';

let dir: string;
let session: DuckSession;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-load-prop-'));
  session = await DuckSession.open({ threads: 1 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

/** A column kind: its Delta type, values as the file spells them, and each value's canonical text once stored. */
interface Kind {
  type: string;
  value: fc.Arbitrary<string>;
  /** The stored value, read back as text (CAST … AS VARCHAR), for a spelled value. */
  stored: (spelled: string) => string;
  /** The value as a JSON literal (NDJSON) and as a DuckDB literal (Parquet). */
  json: (spelled: string) => string;
  sql: (spelled: string) => string;
}

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const plainInt = fc.tuple(fc.boolean(), digits(1, 18)).map(([neg, d]) => {
  const v = d.replace(/^0+(?=.)/, '');
  return neg && v !== '0' ? `-${v}` : v;
});
const isoDate = fc
  .date({
    min: new Date('1900-01-01T00:00:00Z'),
    max: new Date('2099-12-31T00:00:00Z'),
    noInvalidDate: true,
  })
  .map((d) => d.toISOString().slice(0, 10));
const isoInstant = fc
  .tuple(
    fc.date({
      min: new Date('1970-01-02T00:00:00Z'),
      max: new Date('2099-12-31T00:00:00Z'),
      noInvalidDate: true,
    }),
    fc.integer({ min: 0, max: 999 }),
  )
  .map(([d, us]) => `${d.toISOString().slice(0, 23)}${String(us).padStart(3, '0')}Z`);
const text = fc.string({
  unit: fc.constantFrom('a', 'Z', ' ', ',', '"', '\n', 'é', '€', '1', ';', '\t'),
  minLength: 0,
  maxLength: 8,
});

const KINDS: Record<string, Kind> = {
  long: {
    type: 'long',
    value: plainInt,
    stored: (s) => s,
    json: (s) => s,
    sql: (s) => `${s}::BIGINT`,
  },
  decimal: {
    type: 'decimal(12,3)',
    value: fc
      .tuple(
        plainInt.filter((v) => v.replace('-', '').length <= 9),
        digits(0, 3),
      )
      .map(([w, f]) => (f === '' ? w : `${w}.${f}`)),
    stored: (s) => {
      const [w, f = ''] = s.split('.');
      const neg = w!.startsWith('-');
      const whole = w!.replace('-', '');
      const out = `${whole}.${f.padEnd(3, '0')}`;
      return neg && out.replace(/[0.]/g, '') !== '' ? `-${out}` : out;
    },
    json: (s) => JSON.stringify(s),
    sql: (s) => `${str(s)}::DECIMAL(12,3)`,
  },
  boolean: {
    type: 'boolean',
    value: fc.constantFrom('true', 'false', 'TRUE', 'False'),
    stored: (s) => s.toLowerCase(),
    json: (s) => s.toLowerCase(),
    sql: (s) => s,
  },
  date: {
    type: 'date',
    value: isoDate,
    stored: (s) => s,
    json: (s) => JSON.stringify(s),
    sql: (s) => `DATE ${str(s)}`,
  },
  timestamp: {
    type: 'timestamp',
    value: isoInstant,
    stored: (s) => `${s.slice(0, 10)} ${s.slice(11, 26).replace(/\.?0+$/, '')}+00`,
    json: (s) => JSON.stringify(s),
    sql: (s) => `TIMESTAMPTZ ${str(s)}`,
  },
  string: {
    type: 'string',
    value: text,
    stored: (s) => s,
    json: (s) => JSON.stringify(s),
    sql: (s) => str(s),
  },
};
const NAMES = Object.keys(KINDS);

/** Rows of spelled values (null: NULL), one per kind. */
const rowsArb = fc.array(
  fc.tuple(...NAMES.map((k) => fc.option(KINDS[k]!.value, { nil: null, freq: 5 }))),
  { minLength: 1, maxLength: 6 },
);

function csvField(v: string | null): string {
  if (v === null) return '';
  return v === '' || /[",\n\r]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
}

async function writeFileOf(
  format: 'csv' | 'ndjson' | 'parquet',
  rows: (string | null)[][],
): Promise<LoadFile> {
  const path = join(dir, `f${n++}.${format}`);
  if (format === 'csv') {
    await writeFile(
      path,
      [NAMES.join(','), ...rows.map((r) => r.map(csvField).join(','))].join('\n') + '\n',
    );
  } else if (format === 'ndjson') {
    await writeFile(
      path,
      rows
        .map(
          (r) =>
            `{${r.map((v, i) => `${JSON.stringify(NAMES[i])}:${v === null ? 'null' : KINDS[NAMES[i]!]!.json(v)}`).join(',')}}`,
        )
        .join('\n') + '\n',
    );
  } else {
    const selects = rows.map(
      (r) =>
        `SELECT ${r.map((v, i) => `${v === null ? 'NULL' : KINDS[NAMES[i]!]!.sql(v)} AS ${ident(NAMES[i]!)}`).join(', ')}`,
    );
    await session.run(`COPY (${selects.join(' UNION ALL ')}) TO ${str(path)} (FORMAT parquet)`);
  }
  return {
    localPath: path,
    key: `landing/${path.split('/').pop()}`,
    lastModified: new Date('2026-11-01T00:00:00Z'),
    format,
  };
}

const SCHEMA: StructType = {
  type: 'struct',
  fields: NAMES.map((k) => ({ name: k, type: KINDS[k]!.type, nullable: true, metadata: {} })),
};

/** The loaded table's rows, every column as text, in file order. */
async function stored(table: string): Promise<(string | null)[][]> {
  const rows = await session.allJson(
    `SELECT ${NAMES.map((k) => `CAST(${ident(k)} AS VARCHAR) AS ${ident(k)}`).join(', ')} FROM ${ident(table)} ORDER BY _source_row`,
  );
  return rows.map((r) => NAMES.map((k) => (r[k] === null ? null : String(r[k]))));
}

const expected = (rows: (string | null)[][]) =>
  rows.map((r) => r.map((v, i) => (v === null ? null : KINDS[NAMES[i]!]!.stored(v))));

describe('loading into a table of every scalar type stores exactly what the file holds', () => {
  for (const format of ['csv', 'ndjson', 'parquet'] as const) {
    it(`${format} files`, async () => {
      await fc.assert(
        fc.asyncProperty(rowsArb, async (rows) => {
          const file = await writeFileOf(format, rows);
          await loadSourceFiles(session, [file], { table: 't', schema: SCHEMA });
          expect(await stored('t')).toEqual(expected(rows));
        }),
        { numRuns: 40, seed: 1818 },
      );
    });
  }
});

describe('a text that does not spell a value of its column type is refused, never stored changed', () => {
  // Near misses of each kind's texts: blanks, separators, exponents, signs, other date forms.
  const damaged = fc.constantFrom<[string, string]>(
    ['long', ' 42'],
    ['long', '1_000'],
    ['long', '1e3'],
    ['long', '12.5'],
    ['long', '0x10'],
    ['long', '99999999999999999999'],
    ['decimal', '1.0005'],
    ['decimal', '1e2'],
    ['decimal', '1234567890.5'],
    ['decimal', ' 1.5'],
    ['boolean', 'yes'],
    ['boolean', '1'],
    ['date', '2026-02-30'],
    ['date', '01/02/2026'],
    ['date', ' 2026-01-01'],
    ['timestamp', '2026-01-01 25:00'],
    ['timestamp', 'noon'],
  );
  it('csv files', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, damaged, fc.nat(), async (rows, [kind, bad], at) => {
        const row = at % rows.length;
        const broken = rows.map((r, i) =>
          i === row ? r.map((v, j) => (NAMES[j] === kind ? bad : v)) : r,
        );
        const file = await writeFileOf('csv', broken);
        const err = await loadSourceFiles(session, [file], { table: 'bad', schema: SCHEMA }).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(BadFileError);
        // The line the row starts on: the header, then each earlier row's lines (quoted line breaks count).
        const line =
          2 +
          row +
          broken
            .slice(0, row)
            .reduce(
              (sum, r) => sum + r.reduce((k, v) => k + (v?.split('\n').length ?? 1) - 1, 0),
              0,
            );
        expect((err as BadFileError).context).toMatchObject({ column: kind, line });
      }),
      { numRuns: 20, seed: 1819 },
    );
  });
});

describe('a new table from CSV: the inferred types hold every value as the file spells it', () => {
  it('csv files, types inferred from the batch', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, async (rows) => {
        const file = await writeFileOf('csv', rows);
        await loadSourceFiles(session, [file], { table: 'inferred' });
        const types = new Map(
          (await session.all(`DESCRIBE inferred`)).map((r) => [
            String(r['column_name']),
            String(r['column_type']),
          ]),
        );
        const got = await stored('inferred');
        for (const [i, k] of NAMES.entries()) {
          const type = types.get(k)!;
          for (const [r, row] of rows.entries()) {
            const v = row[i]!;
            const g = got[r]![i]!;
            if (v === null || (k === 'string' && v === '')) continue; // an empty string stays empty text or NULL per RFC 4180 quoting
            if (type === 'VARCHAR') expect(g).toBe(v);
            else if (type === 'BIGINT' || type.startsWith('DECIMAL'))
              expect(BigInt(g.split('.')[0]!)).toBe(BigInt(v.split('.')[0]!));
            else if (type === 'DOUBLE') expect(Number(g)).toBe(Number(v));
            else if (type === 'BOOLEAN') expect(g).toBe(v.toLowerCase());
            else if (type === 'DATE') expect(g).toBe(v);
            else if (type.startsWith('TIMESTAMP')) expect(g).toBe(KINDS['timestamp']!.stored(v));
            else throw new Error(`unexpected inferred type ${type} of ${k}`);
          }
        }
      }),
      { numRuns: 15, seed: 1820 },
    );
  });
});
