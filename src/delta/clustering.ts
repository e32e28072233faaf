/**
 * Clustered tables (PROTOCOL.md "Clustered Table"; docs/delta-protocol.md, Clustering): the
 * `clustering` writer feature and the `delta.clustering` domain naming the clustering columns.
 * tidemark is not a clustering implementation: it never rewrites the domain (replay and
 * checkpoints carry it as it is), leaves `clusteringProvider` unset on the files it writes, and
 * writes new files sorted by the clustering columns so they stay close to clustered.
 */
import { DeltaLogError } from '../errors.js';
import { physicalName } from './column-mapping.js';
import type { Snapshot } from './snapshot.js';
import { TableConfig } from './table-config.js';

/** The system domain naming the clustering columns. */
export const CLUSTERING_DOMAIN = 'delta.clustering';

/**
 * The clustering columns of a table with the `clustering` feature, as top-level column names in
 * the schema's (logical) spelling; [] for other tables. The domain holds physical names (equal
 * to the logical ones without column mapping) in one of two shapes: a list of name-part lists
 * (Spark, Kernel) or a flat list (the protocol's example). Nested columns are left out: they
 * cannot order the rows of a file by themselves.
 */
export function clusteringColumns(
  snapshot: Pick<Snapshot, 'protocol' | 'metadata' | 'domains' | 'schema' | 'tableUri'>,
): string[] {
  const table = TableConfig.of(snapshot.protocol, snapshot.metadata);
  if (!table.clustered) return [];
  const domain = snapshot.domains.get(CLUSTERING_DOMAIN);
  if (!domain) return [];
  const mode = table.columnMapping;
  const logical = new Map(snapshot.schema.fields.map((f) => [physicalName(f, mode), f.name]));
  return namePaths(domain.configuration, snapshot.tableUri).flatMap((path) => {
    const name = path.length === 1 ? logical.get(path[0]!) : undefined;
    return name === undefined ? [] : [name];
  });
}

/** The `clusteringColumns` of the domain's JSON as name paths. */
function namePaths(configuration: string, uri: string): string[][] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(configuration);
  } catch (cause) {
    throw new DeltaLogError(
      `[delta] the ${CLUSTERING_DOMAIN} domain of ${uri} is not JSON: ${configuration}`,
      { context: { uri }, cause },
    );
  }
  const columns = (parsed as { clusteringColumns?: unknown } | null)?.clusteringColumns;
  if (!Array.isArray(columns)) return [];
  return columns.flatMap((c: unknown) => {
    if (typeof c === 'string') return [[c]];
    if (Array.isArray(c) && c.every((part) => typeof part === 'string')) return [c as string[]];
    return [];
  });
}
