/**
 * Derived fixtures (delta-notes-writers §9): a private copy of a shared table with one change
 * made the way a writer would make it, for features no shared table has in a writable form.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serializeCommit, type Metadata } from '../../src/delta/actions.js';
import { commitKey } from '../../src/delta/log-files.js';
import { copySharedTable } from './shared-tables.js';

/**
 * Table 16 as it would be with the standard feature name: writer feature `liquid` becomes
 * `clustering`, and the `delta.liquid` domain becomes `delta.clustering` in Spark's shape
 * (`{"clusteringColumns":[["id"]]}`). Row tracking (enabled, hwm 9, baseRowId 0..9), deletion
 * vectors and the rowTracking domain stay as Databricks wrote them.
 */
export async function clusteredRowTrackingTable(): Promise<string> {
  const dir = await copySharedTable('liquid-clustering-rowtracking');
  const file = join(dir, commitKey(0));
  const lines = (await readFile(file, 'utf8')).split('\n').map((line) => {
    if (line.includes('"writerFeatures"')) return line.replace('"liquid"]', '"clustering"]');
    if (line.includes('"domain":"delta.liquid"')) {
      return JSON.stringify({
        domainMetadata: {
          domain: 'delta.clustering',
          configuration: '{"clusteringColumns":[["id"]]}',
          removed: false,
        },
      });
    }
    return line;
  });
  await writeFile(file, lines.join('\n'));
  return dir;
}

/**
 * A copy of a shared table with one more commit (at `version`) that sets table properties, as
 * `ALTER TABLE … SET TBLPROPERTIES` does: a metaData with the configuration extended.
 */
export async function withProperties(
  name: string,
  opts: { version: number; metadata: Metadata; properties: Record<string, string> },
): Promise<string> {
  const dir = await copySharedTable(name);
  const metaData: Metadata = {
    ...opts.metadata,
    configuration: { ...opts.metadata.configuration, ...opts.properties },
  };
  const commitInfo = {
    timestamp: Date.now(),
    operation: 'SET TBLPROPERTIES',
    operationParameters: { properties: JSON.stringify(opts.properties) },
  };
  await writeFile(
    join(dir, commitKey(opts.version)),
    serializeCommit([{ commitInfo }, { metaData }]),
  );
  return dir;
}
