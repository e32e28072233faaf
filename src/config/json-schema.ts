/**
 * The config's JSON schema, for editors: `tidemark.schema.json` at the repository root is
 * generated from the zod schema by `npm run schema`, and a test fails when it is stale.
 * A config file opts in with `# yaml-language-server: $schema=./tidemark.schema.json`.
 *
 * The same schema tells "did you mean" which fields exist where (`fieldsAt`).
 */
import { z } from 'zod';
import { configSchema } from './schema.js';

/** A JSON schema node, as far as `fieldsAt` reads it. */
interface Node {
  properties?: Record<string, Node>;
  items?: Node;
  oneOf?: Node[];
  anyOf?: Node[];
  const?: unknown;
}

let cached: Record<string, unknown> | undefined;

/** The JSON schema of the config file as written (input types: `15m`, `1GiB`, defaults optional). */
export function configJsonSchema(): Record<string, unknown> {
  // draft-07: what YAML and JSON language servers read best.
  cached ??= {
    ...z.toJSONSchema(configSchema, { io: 'input', target: 'draft-07' }),
    title: 'tidemark config',
    description:
      'Jobs that load new files from a landing zone into Delta Lake tables (tidemark.yaml)',
  };
  return cached;
}

/** The text of `tidemark.schema.json`. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

/**
 * The field names allowed at `path` (an object's place in the config), given the parsed
 * document `raw` (it picks the `discover` variant by its `by`); empty when unknown.
 */
export function fieldsAt(path: readonly PropertyKey[], raw: unknown): string[] {
  let nodes: Node[] = [configJsonSchema() as Node];
  let value = raw;
  for (const part of path) {
    value =
      value !== null && typeof value === 'object'
        ? (value as Record<PropertyKey, unknown>)[part]
        : undefined;
    nodes = nodes.flatMap(variants).flatMap((n) => {
      const next = typeof part === 'number' ? n.items : n.properties?.[String(part)];
      return next ? [next] : [];
    });
  }
  const objects = nodes.flatMap(variants).filter((n) => n.properties);
  const matching = objects.filter((n) =>
    Object.entries(n.properties!).every(
      ([k, p]) =>
        p.const === undefined || p.const === (value as Record<string, unknown> | undefined)?.[k],
    ),
  );
  return [
    ...new Set(
      (matching.length > 0 ? matching : objects).flatMap((n) => Object.keys(n.properties!)),
    ),
  ];
}

function variants(node: Node): Node[] {
  const alternatives = node.oneOf ?? node.anyOf;
  return alternatives ? alternatives.flatMap(variants) : [node];
}
