/**
 * `tidemark.schema.json` (for editors) is generated from the zod schema; it must be the
 * committed file's exact text, so a schema change without `npm run schema` fails here.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { configJsonSchema, configJsonSchemaText, fieldsAt } from '../../src/config/json-schema.js';

const committed = new URL('../../tidemark.schema.json', import.meta.url);

describe('tidemark.schema.json', () => {
  it('is up to date with the config schema (run `npm run schema` to regenerate it)', async () => {
    const text = await readFile(committed, 'utf8');
    expect(
      text === configJsonSchemaText(),
      'tidemark.schema.json is stale: run `npm run schema` and commit it',
    ).toBe(true);
  });

  it('describes the config file as written: draft-07, strict objects, input forms of durations and sizes', () => {
    const schema = configJsonSchema() as {
      $schema: string;
      required: string[];
      properties: {
        jobs: {
          items: {
            additionalProperties: boolean;
            properties: Record<string, { anyOf?: unknown[]; default?: unknown }>;
          };
        };
      };
    };
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(schema.required).toEqual(['jobs']);
    const job = schema.properties.jobs.items;
    expect(job.additionalProperties).toBe(false);
    expect(job.properties['maxBytesPerBatch']).toMatchObject({ default: '1GiB' });
    expect(Object.keys(job.properties)).toEqual(
      expect.arrayContaining([
        'name',
        'source',
        'target',
        'maxFilesPerBatch',
        'maxBytesPerBatch',
        'onBadFile',
        'schemaEvolution',
        'concurrency',
      ]),
    );
  });

  it('knows the fields at each place of a config, by discover variant', () => {
    const raw = parseDocument('jobs: [{ source: { discover: { by: modified } } }]').toJS();
    expect(fieldsAt(['jobs', 0, 'source', 'discover'], raw)).toEqual([
      'by',
      'settle',
      'incrementalListing',
      'start',
      'requireSuccessMarker',
      'onOverwrite',
    ]);
    expect(fieldsAt(['jobs', 0, 'source'], raw)).toEqual([
      'uri',
      'format',
      'csv',
      'columns',
      'include',
      'exclude',
      'storage',
      'discover',
      'snapshot',
      'snapshotAsOf',
      'snapshotPattern',
      'maxDeleteShare',
      'afterLoad',
    ]);
    const s3 = [
      'endpoint',
      'region',
      'forcePathStyle',
      'connectTimeout',
      'requestTimeout',
      'idleTimeout',
      'maxAttempts',
      'uploadChecksum',
      'etagChecksum',
    ];
    expect(fieldsAt(['jobs', 0, 'target', 'storage'], raw)).toEqual([...s3, 'singleWriter']);
    expect(fieldsAt(['jobs', 0, 'source', 'storage'], raw)).toEqual(s3);
    expect(fieldsAt(['engine'], raw)).toEqual(['memoryLimit', 'threads']);
    expect(fieldsAt([], raw)).toEqual(['storage', 'engine', 'lineage', 'metrics', 'jobs']);
    expect(fieldsAt(['nowhere'], raw)).toEqual([]);
  });
});
