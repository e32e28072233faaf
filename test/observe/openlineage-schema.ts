/**
 * Validation of OpenLineage events against the spec's published JSON schemas, vendored in
 * test/fixtures/openlineage (see its README): the RunEvent schema, and each facet against its own
 * schema, found by the facet's `_schemaURL`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';

const DIR = new URL('../fixtures/openlineage/', import.meta.url);
// ajv-formats is CommonJS: its function is the module or its `default`, depending on the loader.
const addFormats = ((formatsModule as unknown as { default?: typeof formatsModule }).default ??
  formatsModule) as unknown as (ajv: Ajv2020) => void;

function load(name: string): { $id: string } & Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(name, DIR), 'utf8')) as { $id: string } & Record<
    string,
    unknown
  >;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const core = load('OpenLineage.json');
ajv.addSchema(core);
for (const f of readdirSync(new URL('facets/', DIR))) ajv.addSchema(load(`facets/${f}`));

/** The problems of `event` against the RunEvent schema and its facets' schemas; [] when valid. */
export function openLineageProblems(event: unknown): string[] {
  const problems: string[] = [];
  const check = (ref: string, value: unknown, where: string) => {
    const validate = ajv.getSchema(ref);
    if (!validate) return problems.push(`${where}: no vendored schema for ${ref}`);
    if (!validate(value))
      problems.push(
        ...(validate.errors ?? []).map((e) => `${where}${e.instancePath} ${e.message ?? ''}`),
      );
    return 0;
  };
  check(`${core.$id}#/$defs/RunEvent`, event, 'event');
  const visit = (value: unknown, where: string) => {
    if (value === null || typeof value !== 'object') return;
    const obj = value as Record<string, unknown>;
    if (typeof obj['_schemaURL'] === 'string') check(obj['_schemaURL'], obj, where);
    for (const [k, v] of Object.entries(obj)) visit(v, `${where}.${k}`);
  };
  visit(event, 'event');
  return problems;
}
