/**
 * One CSV dialect per job, never sniffed per file: real files, real DuckDB. RFC 4180 by default
 * (`,`, `"` quotes doubled to escape, a header row), `source.csv` overrides it, and a file that
 * breaks it fails naming the file and the line, with or without the target's schema.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StructType } from '../../src/delta/schema.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { countCsvFields } from '../../src/engine/csv-records.js';
import { csvDialect, describeDialect, fileSelectSql } from '../../src/engine/file-select.js';
import { loadSourceFiles, type CsvOptions, type LoadFile } from '../../src/engine/load.js';
import { resolveFormat } from '../../src/engine/source-format.js';
import { BadFileError } from '../../src/errors.js';

let dir: string;
let session: DuckSession;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-csv-'));
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

async function land(name: string, body: string | Buffer): Promise<LoadFile> {
  await writeFile(join(dir, name), body);
  return {
    localPath: join(dir, name),
    key: `s3://landing/orders/${name}`,
    lastModified: new Date('2026-11-01T00:00:00Z'),
    format: resolveFormat(name),
  };
}

/** Rows of the loaded files (lineage columns left out), in file order. */
async function rowsOf(
  files: LoadFile[],
  csv?: CsvOptions,
  schema?: StructType,
): Promise<Record<string, unknown>[]> {
  await loadSourceFiles(session, files, {
    table: 'csv_t',
    ...(csv ? { csv } : {}),
    ...(schema ? { schema } : {}),
  });
  return session.allJson(
    'SELECT * EXCLUDE (_source_file, _source_modified, _source_row) FROM csv_t ORDER BY _source_file, _source_row',
  );
}

async function failureOf(
  files: LoadFile[],
  csv?: CsvOptions,
  schema?: StructType,
): Promise<BadFileError> {
  const err = await loadSourceFiles(session, files, {
    table: 'csv_bad',
    ...(csv ? { csv } : {}),
    ...(schema ? { schema } : {}),
  }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BadFileError);
  return err as BadFileError;
}

const ORDERS: StructType = {
  type: 'struct',
  fields: [
    { name: 'id', type: 'long', nullable: true, metadata: {} },
    { name: 'seq', type: 'long', nullable: true, metadata: {} },
    { name: 'status', type: 'string', nullable: true, metadata: {} },
    { name: 'amount', type: 'string', nullable: true, metadata: {} },
    { name: 'note', type: 'string', nullable: true, metadata: {} },
  ],
};

// The file: the quote opened on line 3 never closes, so the rest of the file is one value.
const UNTERMINATED =
  'id,seq,status,amount,note\n605,6,"old",1.00,x\n606,7,"new,1.00,y\n607,8,ok,2.00,z\n608,9,ok,3.00,w\n';

describe('an unterminated quote', () => {
  it('fails naming the file and the line where the quote opens, not a row with status "new', async () => {
    const f = await land('unterminated.csv', UNTERMINATED);
    const err = await failureOf([f]);
    expect(err.message).toBe(
      `[load] cannot read s3://landing/orders/unterminated.csv: line 3: a quoted field is not closed (unterminated quote); ` +
        `the job reads CSV with delimiter ',', quote '"', escape '"' and a header row (source.csv)`,
    );
    expect(err.context).toMatchObject({ key: 's3://landing/orders/unterminated.csv', line: 3 });
    expect(err.message).not.toContain(dir);
  });

  it("fails the same way when read in the target table's types", async () => {
    const f = await land('unterminated-typed.csv', UNTERMINATED);
    const err = await failureOf([f], undefined, ORDERS);
    expect(err.context).toMatchObject({
      key: 's3://landing/orders/unterminated-typed.csv',
      line: 3,
    });
    expect(err.message).toMatch(/line 3: a quoted field is not closed/);
  });

  it('and when it sits among good files of the same batch', async () => {
    const good = await land('good-neighbour.csv', 'id,seq,status,amount,note\n1,1,ok,1.00,x\n');
    const bad = await land('unterminated-among.csv', UNTERMINATED);
    const err = await failureOf([good, bad]);
    expect(err.context).toMatchObject({
      key: 's3://landing/orders/unterminated-among.csv',
      line: 3,
    });
  });
});

describe('ragged rows', () => {
  it.each([
    [
      'a row with a missing field',
      'missing.csv',
      'a,b,c\n1,2,3\n4,5\n6,7,8\n',
      3,
      'expected 3 fields, found 2',
    ],
    [
      'a row with an extra field',
      'extra.csv',
      'a,b,c\n1,2,3\n4,5,6,7\n6,7,8\n',
      3,
      'expected 3 fields, found 4',
    ],
    [
      'an unquoted comma in a value',
      'comma.csv',
      'id,status\n1,ok\n2,new,pending\n',
      3,
      'expected 2 fields, found 3',
    ],
  ])('%s fails naming the file and the line', async (_, name, body, line, says) => {
    const f = await land(name, body);
    for (const schema of [
      undefined,
      {
        type: 'struct',
        fields: [{ name: 'a', type: 'long', nullable: true, metadata: {} }],
      } as StructType,
    ]) {
      const err = await failureOf([f], undefined, schema);
      expect(err.context).toMatchObject({ key: `s3://landing/orders/${name}`, line });
      expect(err.message).toContain(`s3://landing/orders/${name}: line ${line}: ${says}`);
    }
  });

  it('a ragged row far past the sniffer sample is named by line too', async () => {
    const lines = Array.from({ length: 25_000 }, (_, i) => `${i},x,1`);
    lines[24_000] = '77,x';
    const f = await land('far.csv', `a,b,c\n${lines.join('\n')}\n`);
    const err = await failureOf([f]);
    expect(err.context).toMatchObject({ line: 24_002 });
  });

  it('a gzip-compressed file is located the same way', async () => {
    const f = await land('ragged.csv.gz', gzipSync('a,b\n1,2\n3\n'));
    const err = await failureOf([f]);
    expect(err.context).toMatchObject({ key: 's3://landing/orders/ragged.csv.gz', line: 3 });
    expect(err.message).toContain('expected 2 fields, found 1');
  });
});

describe('RFC 4180 by default', () => {
  it('a quoted field holds commas, line breaks and doubled quotes', async () => {
    const f = await land('quoted.csv', 'id,note,n\n1,"x, y\nz",3\n4,"he said ""hi""",6\n');
    expect(await rowsOf([f])).toEqual([
      { id: '1', note: 'x, y\nz', n: '3' },
      { id: '4', note: 'he said "hi"', n: '6' },
    ]);
    const err = await failureOf([
      await land('quoted-then-ragged.csv', 'id,note,n\n1,"x, y\nz",3\n4,5\n'),
    ]);
    // DuckDB's own count says line 3 (a line break inside quotes does not advance it): the
    // error names the file's line, 4.
    expect(err.context).toMatchObject({ line: 4 });
    expect(err.message).toContain('line 4: expected 3 fields, found 2');
  });

  it('the first line is the header, always: a file of numbers does not lose its first row to a guess', async () => {
    const f = await land('numbers.csv', 'a,b\n1,2\n3,4\n');
    expect(await rowsOf([f])).toEqual([
      { a: '1', b: '2' },
      { a: '3', b: '4' },
    ]);
  });

  it('a line starting with # is data, not a comment the sniffer drops', async () => {
    const f = await land('hash.csv', 'tag,n\n#1,2\n3,4\n');
    expect(await rowsOf([f])).toEqual([
      { tag: '#1', n: '2' },
      { tag: '3', n: '4' },
    ]);
  });

  it('a quote inside an unquoted value is part of the value', async () => {
    const f = await land('inch.csv', 'id,size\n1,5" screen\n');
    expect(await rowsOf([f])).toEqual([{ id: '1', size: '5" screen' }]);
  });

  it('CRLF line ends read like LF', async () => {
    const f = await land('crlf.csv', 'a,b\r\n1,x\r\n2,"y"\r\n');
    expect(await rowsOf([f])).toEqual([
      { a: '1', b: 'x' },
      { a: '2', b: 'y' },
    ]);
  });

  it('a quoted empty field is an empty string, an unquoted one NULL (RFC 4180); nullstr still names the NULL text', async () => {
    const f = await land('empties.csv', 'id,note\n1,""\n2,\n3,x\n');
    expect(await rowsOf([f])).toEqual([
      { id: '1', note: '' },
      { id: '2', note: null },
      { id: '3', note: 'x' },
    ]);
    const g = await land('empties-na.csv', 'id,note\n1,""\n2,\n3,NA\n4,"NA"\n');
    expect(await rowsOf([g], { nullstr: 'NA' })).toEqual([
      { id: '1', note: '' },
      { id: '2', note: '' },
      { id: '3', note: null },
      { id: '4', note: 'NA' },
    ]);
  });

  it('types are still detected per file (dialect pinned, types not)', async () => {
    const f = await land('typed.csv', 'id,amount,day\n1,1.50,2026-11-01\n');
    const cols = await session.all(`DESCRIBE ${fileSelectSql(f)}`);
    expect(cols.slice(0, 3).map((c) => c['column_type'])).toEqual(['BIGINT', 'DOUBLE', 'DATE']);
  });
});

describe('blank lines', () => {
  it('a value that does not convert is named by its physical line: blank lines DuckDB skipped and line breaks inside quotes counted', async () => {
    const f = await land(
      'blank-lines.csv',
      'id,seq,status,amount,note\n1,1,a,1,x\n\n2,2,b,2,y\n\n3,x,c,3,z\n',
    );
    const err = await failureOf([f], undefined, ORDERS);
    expect(err.context).toMatchObject({
      key: 's3://landing/orders/blank-lines.csv',
      column: 'seq',
      line: 6,
      row: 3,
    });
    expect(err.message).toContain('line 6 (data row 3)');
    // Line 3 is blank inside a quoted field (part of the value); line 5 is blank outside one.
    const g = await land(
      'blank-in-quotes.csv',
      'id,seq,status,amount,note\n1,1,"a\n\nb",1,x\n\n3,x,c,3,z\n',
    );
    expect((await failureOf([g], undefined, ORDERS)).context).toMatchObject({ line: 6, row: 2 });
  });

  it('a ragged row after blank lines, in quotes and out, is named by its physical line', async () => {
    const f = await land('ragged-after-blanks.csv', 'id,note,n\n1,"x\n\ny",3\n\n4,5\n');
    const err = await failureOf([f]);
    expect(err.context).toMatchObject({
      key: 's3://landing/orders/ragged-after-blanks.csv',
      line: 6,
    });
    expect(err.message).toContain('line 6: expected 3 fields, found 2');
  });

  it('in a one-column file without nullstr a blank line is a NULL row; with nullstr (where it would be an empty string DuckDB drops) it is refused naming the line', async () => {
    const f = await land('one-column.csv', 'name\na\n\nb\n');
    expect(await rowsOf([f])).toEqual([{ name: 'a' }, { name: null }, { name: 'b' }]);
    const g = await land('one-column-na.csv', 'name\na\n\nb\nNA\n');
    const err = await failureOf([g], { nullstr: 'NA' });
    expect(err.context).toMatchObject({
      key: 's3://landing/orders/one-column-na.csv',
      line: 3,
      column: 'name',
    });
    expect(err.message).toContain(
      'line 3 is blank, in a file of one column ("name") read with source.csv.nullstr set',
    );
    // Each file of a bulk read is checked, a last blank line too; one inside quotes is part of a value.
    const good = await land('one-column-quoted.csv', 'name\n"a\n\nb"\nNA\n""\n');
    const last = await land('one-column-last.csv', 'name\nx\n\n');
    expect((await failureOf([good, last], { nullstr: 'NA' })).context).toMatchObject({
      key: 's3://landing/orders/one-column-last.csv',
      line: 3,
    });
    expect(await rowsOf([good], { nullstr: 'NA' })).toEqual([
      { name: 'a\n\nb' },
      { name: null },
      { name: '' },
    ]);
  });

  it("with nullstr '' (DuckDB's own NULL text) a blank line of a one-column file is a NULL row, and a later line is named as the file's", async () => {
    const f = await land('one-column-empty-nullstr.csv', 'name\na\n\nb\n');
    expect(await rowsOf([f], { nullstr: '' })).toEqual([
      { name: 'a' },
      { name: null },
      { name: 'b' },
    ]);
    const g = await land('one-column-empty-nullstr-bad.csv', 'n\n1\n\nx\n');
    const err = await failureOf(
      [g],
      { nullstr: '' },
      {
        type: 'struct',
        fields: [{ name: 'n', type: 'long', nullable: true, metadata: {} }],
      },
    );
    expect(err.context).toMatchObject({
      key: 's3://landing/orders/one-column-empty-nullstr-bad.csv',
      line: 4,
    });
  });
});

describe('source.csv overrides the dialect for every file of the job', () => {
  it('header: false names the columns column0, column1, …', async () => {
    const f = await land('noheader.csv', '1,2,3\n4,5,6\n');
    expect(await rowsOf([f], { header: false })).toEqual([
      { column0: '1', column1: '2', column2: '3' },
      { column0: '4', column1: '5', column2: '6' },
    ]);
  });

  it('a TSV file is tab-separated by default, and may quote', async () => {
    const f = await land('orders.tsv', 'id\tnote\n1\ta,b\n2\t"x\ty"\n');
    expect(await rowsOf([f])).toEqual([
      { id: '1', note: 'a,b' },
      { id: '2', note: 'x\ty' },
    ]);
  });

  it('a semicolon dialect reads ; files, and refuses a comma file instead of guessing', async () => {
    const semi = await land('semi.csv', 'id;price\n1;"2,50"\n2;3\n');
    expect(await rowsOf([semi], { delimiter: ';' })).toEqual([
      { id: '1', price: '2,50' },
      { id: '2', price: '3' },
    ]);
    // The same job meeting a comma file: one column per line (header "id,price"), until a line
    // has a `;`. Nothing is re-guessed for this file.
    const comma = await land('comma-in-semi-job.csv', 'id,price\n1,2\n3;4\n');
    const err = await failureOf([comma], { delimiter: ';' });
    expect(err.context).toMatchObject({ line: 3 });
    expect(err.message).toContain(
      "expected 1 fields, found 2; the job reads CSV with delimiter ';', quote '\"', escape '\"' and a header row",
    );
  });

  it('a backslash escape, a single-quote quote, a null string', async () => {
    const f = await land('custom.csv', "id,note\n1,'it\\'s'\n2,NA\n");
    expect(await rowsOf([f], { quote: "'", escape: '\\', nullstr: 'NA' })).toEqual([
      { id: '1', note: "it's" },
      { id: '2', note: null },
    ]);
  });

  it('quote "" turns quoting off: a " is an ordinary character', async () => {
    const f = await land('noquote.tsv', 'id\tnote\n1\t"half\n');
    expect(await rowsOf([f], { quote: '' })).toEqual([{ id: '1', note: '"half' }]);
  });
});

describe('the dialect helpers', () => {
  it('defaults: RFC 4180, tab for TSV, escape follows the quote', () => {
    expect(csvDialect('csv')).toEqual({ header: true, delimiter: ',', quote: '"', escape: '"' });
    expect(csvDialect('tsv').delimiter).toBe('\t');
    expect(csvDialect('csv', { quote: "'" }).escape).toBe("'");
    expect(describeDialect(csvDialect('tsv', { header: false, quote: '' }))).toBe(
      'delimiter tab, quote none, escape none and no header row',
    );
  });

  it('counts the fields of a line as the dialect reads it', () => {
    const rfc = csvDialect('csv');
    expect(countCsvFields('a,b,c', rfc)).toBe(3);
    expect(countCsvFields('"a,b",c\r', rfc)).toBe(2);
    expect(countCsvFields('"he said ""x, y""",2', rfc)).toBe(2);
    expect(countCsvFields('5" screen,2', rfc)).toBe(2);
    expect(countCsvFields('"open,2', rfc)).toBeNull();
    expect(countCsvFields('a||b||c', csvDialect('csv', { delimiter: '||' }))).toBe(3);
    expect(countCsvFields('"a\\",b",c', csvDialect('csv', { escape: '\\' }))).toBe(2);
  });

  it('pins every dialect option in the SQL, so the sniffer only detects types', () => {
    const sql = fileSelectSql({
      localPath: '/x/a.csv',
      key: 'a.csv',
      lastModified: new Date(0),
      format: 'csv',
    });
    for (const option of [
      "delim = ','",
      `quote = '"'`,
      `escape = '"'`,
      'header = true',
      "comment = ''",
      'skip = 0',
      'strict_mode = true',
      'null_padding = false',
    ]) {
      expect(sql).toContain(option);
    }
  });
});
