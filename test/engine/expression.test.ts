/**
 * User-written expressions through DuckDB's own parser: exactly one expression, no subqueries
 * unless allowed, and the top-level AND terms printed back as SQL (which partition pruning
 * evaluates one by one). Real DuckDB.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { conjuncts, expressionProblem } from '../../src/engine/expression.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(() => session.close());

describe('expressionProblem', () => {
  it.each([
    ["status = 'paid' AND amount > 1", null],
    ['1=1; DROP TABLE t', /syntax error/],
    ['1) AS a, (2', 'not a single expression'],
    ['x IN (SELECT 1)', 'subqueries are not allowed here'],
  ])('%s', async (expr, problem) => {
    const found = await expressionProblem(session, expr);
    if (problem === null || typeof problem === 'string') expect(found).toBe(problem);
    else expect(found).toMatch(problem);
  });
});

describe('conjuncts', () => {
  it('splits the top-level AND (nested ANDs are flattened), keeps OR whole, and never changes a constant', async () => {
    const sorted = async (e: string) => (await conjuncts(session, e)).sort();
    expect(
      await sorted("d = '2025-06-02' AND (s = 'x' OR s = 'y') AND b > 9007199254740993"),
    ).toEqual(["((s = 'x') OR (s = 'y'))", '(b > 9007199254740993)', "(d = '2025-06-02')"]);
    expect(await sorted('(a AND b) AND c')).toEqual(['a', 'b', 'c']);
    expect(await sorted('a OR b AND c')).toEqual(['(a OR (b AND c))']);
    expect(await sorted("NOT (d = '2025-06-02' AND s = 'x')")).toEqual([
      "(NOT ((d = '2025-06-02') AND (s = 'x')))",
    ]);
    expect(await sorted('"Order Id" = 1')).toEqual(['("Order Id" = 1)']);
  });
});
