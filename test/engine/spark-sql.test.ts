/** Spark SQL constraint text in DuckDB's spelling: quoting and `<=>` rewritten, nothing else touched. */
import { describe, expect, it } from 'vitest';
import { sparkExpressionToDuck } from '../../src/engine/spark-sql.js';

describe('sparkExpressionToDuck', () => {
  it('leaves plain expressions alone', () => {
    expect(sparkExpressionToDuck('amount >= 0 AND status IS NOT NULL')).toBe(
      'amount >= 0 AND status IS NOT NULL',
    );
  });

  it('turns backtick identifiers into double-quoted ones (doubled backticks, embedded double quotes)', () => {
    expect(sparkExpressionToDuck('`order id` > 0')).toBe('"order id" > 0');
    expect(sparkExpressionToDuck('`a``b` = `say "hi"`')).toBe('"a`b" = "say ""hi"""');
  });

  it('turns double-quoted strings into string literals, and backslash escapes into doubled quotes', () => {
    expect(sparkExpressionToDuck('status IN ("new", "done")')).toBe("status IN ('new', 'done')");
    expect(sparkExpressionToDuck("name <> 'it\\'s'")).toBe("name <> 'it''s'");
    expect(sparkExpressionToDuck('name <> "it\'s"')).toBe("name <> 'it''s'");
    expect(sparkExpressionToDuck("a = 'x\\\\y'")).toBe("a = 'x\\y'");
  });

  it('does not rewrite inside literals', () => {
    expect(sparkExpressionToDuck("a = '`<=>`'")).toBe("a = '`<=>`'");
  });

  it('spells null-safe equality the DuckDB way', () => {
    expect(sparkExpressionToDuck('a <=> b')).toBe('a  IS NOT DISTINCT FROM  b');
  });

  it('throws on an unterminated quote', () => {
    expect(() => sparkExpressionToDuck("a = 'x")).toThrow(/unterminated ' quote/);
    expect(() => sparkExpressionToDuck('`a = 1')).toThrow(/unterminated ` quote/);
  });
});
