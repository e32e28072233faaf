/**
 * `npm run schema`: write `tidemark.schema.json` (the config's JSON schema) at the repository root.
 */
import { writeFile } from 'node:fs/promises';
import { configJsonSchemaText } from './json-schema.js';

const target = new URL('../../tidemark.schema.json', import.meta.url);
await writeFile(target, configJsonSchemaText());
console.log(`wrote ${target.pathname}`);
