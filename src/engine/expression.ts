/**
 * User-written SQL expressions (`deleteWhen`, `show --where`) are spliced into larger statements,
 * so each must parse as exactly ONE expression: `x; DROP TABLE t` or `x) FROM y --` must not get
 * through. Checked with DuckDB's own parser (json_serialize_sql), never with a regex.
 */
import type { DuckSession } from './duckdb.js';
import { str } from './sql.js';

/** Options of `expressionProblem`. */
export interface ExpressionCheck {
  /** Allow subqueries (`x IN (SELECT …)`), which can read other relations; default false. */
  subqueries?: boolean;
}

interface Parsed {
  error?: boolean;
  error_message?: string;
  statements?: { node?: { select_list?: unknown[]; from_table?: { type?: string } } }[];
}

/** Why `expr` is not a single SQL expression (DuckDB's parser message), or null when it is one. */
export async function expressionProblem(
  session: DuckSession,
  expr: string,
  opts: ExpressionCheck = {},
): Promise<string | null> {
  const row = await session.one(
    `SELECT json_serialize_sql(${str(`SELECT (${expr}) AS flag`)}) AS j`,
  );
  const parsed = JSON.parse(String(row?.['j'] ?? '{}')) as Parsed;
  if (parsed.error) return parsed.error_message ?? 'does not parse';
  const node = parsed.statements?.[0]?.node;
  const single =
    parsed.statements?.length === 1 &&
    node?.select_list?.length === 1 &&
    node.from_table?.type === 'EMPTY';
  if (!single) return 'not a single expression';
  if (!opts.subqueries && hasSubquery(node.select_list)) return 'subqueries are not allowed here';
  return null;
}

/** True when the parse tree holds a subquery anywhere. */
function hasSubquery(tree: unknown): boolean {
  if (Array.isArray(tree)) return tree.some(hasSubquery);
  if (tree === null || typeof tree !== 'object') return false;
  const node = tree as Record<string, unknown>;
  if (node['class'] === 'SUBQUERY' || node['type'] === 'SUBQUERY') return true;
  return Object.values(node).some(hasSubquery);
}

/**
 * The top-level AND terms of a checked expression, each as SQL text DuckDB printed back from its
 * parse tree (`a = 1 AND (b OR c)` gives `(a = 1)` and `(b OR c)`); the expression itself when it
 * is not a conjunction. The tree never passes through JavaScript numbers (a BIGINT constant past
 * 2^53 would change): DuckDB's JSON functions cut it and print each term.
 */
export async function conjuncts(session: DuckSession, expr: string): Promise<string[]> {
  const tree = `json_serialize_sql(${str(`SELECT (${expr})`)})`;
  const top = `j->'$.statements[0].node.select_list[0]'`;
  const rows = await session.all(
    `WITH parsed AS (SELECT ${tree} AS j), ` +
      `terms AS (SELECT j, unnest(json_extract(j, '$.statements[0].node.select_list[0].children[*]')) AS term FROM parsed WHERE ${top}->>'type' = 'CONJUNCTION_AND' ` +
      `UNION ALL SELECT j, ${top} AS term FROM parsed WHERE ${top}->>'type' <> 'CONJUNCTION_AND') ` +
      `SELECT json_deserialize_sql(json_merge_patch(j, json_object('statements', json_array(json_merge_patch(j->'$.statements[0]', ` +
      `json_object('node', json_merge_patch(j->'$.statements[0].node', json_object('select_list', json_array(term))))))))) AS s FROM terms`,
  );
  return rows.map((r) => String(r['s']).replace(/^SELECT /, ''));
}

/** Column references in an expression, from DuckDB's parse tree; lambda parameters are left out. */
export async function columnRefs(session: DuckSession, expr: string): Promise<string[][]> {
  const row = await session.one(
    `SELECT json_serialize_sql(${str(`SELECT (${expr}) AS flag`)}) AS j`,
  );
  const refs: string[][] = [];
  const params = new Set<string>();
  const walk = (node: unknown, inLambdaParams: boolean): void => {
    if (Array.isArray(node)) return node.forEach((n) => walk(n, inLambdaParams));
    if (node === null || typeof node !== 'object') return;
    const n = node as Record<string, unknown>;
    if (n['class'] === 'COLUMN_REF' && Array.isArray(n['column_names'])) {
      const names = n['column_names'].map(String);
      if (inLambdaParams) names.forEach((p) => params.add(p));
      else refs.push(names);
      return;
    }
    for (const [k, v] of Object.entries(n))
      walk(v, inLambdaParams || (n['class'] === 'LAMBDA' && k === 'lhs'));
  };
  walk(JSON.parse(String(row?.['j'] ?? '{}')), false);
  return refs.filter((parts) => !(parts.length === 1 && params.has(parts[0]!)));
}
