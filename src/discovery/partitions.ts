/**
 * Walk the partition folders of a layout level by level, listing only what a run needs.
 *
 * Each folder level is listed with delimiter `/`. A folder on the lower edge of the range
 * (the year, then the month, of the first partition needed) is listed with StartAfter set
 * just below that partition's folder name, so earlier years, months and days are never
 * listed; folders after the upper bound (the store clock's current partition) are reported
 * and not descended. So the number of LIST requests of an incremental run follows the
 * partitions in range, not the age of the landing zone. Only the partitions found are
 * then listed in full (recursively), in parallel.
 */
import pLimit from 'p-limit';
import type { ListOptions, ObjectInfo, Storage } from '../storage/storage.js';
import { parseId, type WallTime } from './calendar.js';
import { partialId, type Layout } from './layout.js';

/** A folder that was listed but is not walked, and why. */
export interface SkippedFolder {
  prefix: string;
  reason: string;
}

/** A partition folder and every object below it. */
export interface PartitionFolder {
  id: string;
  prefix: string;
  objects: ObjectInfo[];
}

/** What a walk found. */
export interface PartitionWalk {
  /** Partitions in range, ascending by id, with their objects. */
  partitions: PartitionFolder[];
  /** Folders that do not match the layout, name impossible dates, or lie after the upper bound. */
  skippedFolders: SkippedFolder[];
  /** Objects lying in folder levels above the partitions (not in any partition). */
  strayObjects: ObjectInfo[];
  /** The store's clock at the first listing. */
  serverTime: Date;
  /** LIST requests issued (one per page). */
  listRequests: number;
}

/** Range and limits of a walk. */
export interface WalkOptions {
  /** First partition id wanted; null or absent walks from the oldest. */
  from?: string | null;
  /** Last partition id wanted, from the store clock of the first listing (the open partition). */
  until: (serverTime: Date) => string;
  /** Concurrent LIST requests. */
  concurrency: number;
  signal?: AbortSignal;
}

interface Node {
  prefix: string;
  fields: Partial<WallTime>;
}

/** Counted, concurrency-limited listings that remember the store clock of the first page. */
class Lister {
  requests = 0;
  serverTime = new Date(NaN);
  private readonly limit: ReturnType<typeof pLimit>;

  constructor(
    private readonly storage: Storage,
    concurrency: number,
    private readonly signal?: AbortSignal,
  ) {
    this.limit = pLimit(concurrency);
  }

  list(opts: ListOptions): Promise<{ objects: ObjectInfo[]; prefixes: string[] }> {
    return this.limit(async () => {
      const objects: ObjectInfo[] = [];
      const prefixes: string[] = [];
      for await (const page of this.storage.list({ ...opts, signal: this.signal })) {
        this.requests++;
        if (Number.isNaN(this.serverTime.getTime())) this.serverTime = page.serverTime;
        objects.push(...page.objects);
        prefixes.push(...page.commonPrefixes);
      }
      return { objects, prefixes };
    });
  }
}

/** Find the partition folders in [from, until] and list their objects. */
export async function walkPartitions(
  storage: Storage,
  layout: Layout,
  opts: WalkOptions,
): Promise<PartitionWalk> {
  const lister = new Lister(storage, opts.concurrency, opts.signal);
  const from = opts.from ? mustParse(opts.from) : null;
  const found: Omit<PartitionWalk, 'partitions' | 'serverTime' | 'listRequests'> = {
    skippedFolders: [],
    strayObjects: [],
  };
  let until: string | null = null;
  let nodes: Node[] = [{ prefix: '', fields: {} }];
  for (let index = 0; index < layout.levels.length; index++) {
    const level = layout.levels[index]!;
    if (level.pattern === null) {
      nodes = nodes.map((n) => ({ prefix: `${n.prefix}${level.template}/`, fields: n.fields }));
      continue;
    }
    const listings = await Promise.all(
      nodes.map((node) => listChildren(lister, layout, index, node, from)),
    );
    // The first listing is the first level's (a single folder): it sets the store clock.
    until ??= opts.until(lister.serverTime);
    nodes = [];
    for (const { node, objects, prefixes } of listings) {
      found.strayObjects.push(...objects);
      for (const prefix of prefixes) {
        const child = classifyChild(layout, index, node, prefix, { from, until });
        if (!('reason' in child)) nodes.push(child);
        else if (child.reason !== null) found.skippedFolders.push({ prefix, reason: child.reason });
      }
    }
  }
  const partitions = await Promise.all(
    nodes.map(async (node) => ({
      id: partialId(node.fields, layout.granularity === 'hour' ? 4 : 3),
      prefix: node.prefix,
      objects: (await lister.list({ prefix: node.prefix })).objects,
    })),
  );
  partitions.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { partitions, ...found, serverTime: lister.serverTime, listRequests: lister.requests };
}

/**
 * List the sub-folders of `node` at level `index`. A folder on the lower edge of the range
 * starts after the folder name `from` takes at this level, so earlier ones are not listed.
 */
async function listChildren(
  lister: Lister,
  layout: Layout,
  index: number,
  node: Node,
  from: WallTime | null,
) {
  const unitsAbove = index === 0 ? 0 : layout.levels[index - 1]!.unitsThrough;
  const onEdge =
    from !== null && partialId(node.fields, unitsAbove) === partialId(from, unitsAbove);
  // `2026/03` (no slash) sorts before every key below `2026/03/` and after every key of `2026/02/`.
  const startAfter = onEdge ? node.prefix + layout.formatLevel(index, from) : undefined;
  return { node, ...(await lister.list({ prefix: node.prefix, delimiter: '/', startAfter })) };
}

/**
 * Decide about one child folder: walk it, report it (reason), or drop it silently
 * (reason null: it lies before the range, already covered by earlier runs).
 */
function classifyChild(
  layout: Layout,
  index: number,
  parent: Node,
  prefix: string,
  range: { from: WallTime | null; until: string },
): Node | { reason: string | null } {
  const name = prefix.slice(parent.prefix.length, -1);
  if (name.startsWith('_') || name.startsWith('.'))
    return { reason: 'not data (name starts with _ or .)' };
  const match = layout.matchLevel(index, name, parent.fields);
  if ('reason' in match) return match;
  const units = layout.levels[index]!.unitsThrough;
  const id = partialId(match.fields, units);
  if (range.from !== null && id < partialId(range.from, units)) return { reason: null };
  if (id > range.until.slice(0, id.length)) {
    return { reason: `after the current partition ${range.until} (store clock)` };
  }
  return { prefix, fields: match.fields };
}

function mustParse(id: string): WallTime {
  const t = parseId(id);
  if (!t) throw new Error(`[discovery] not a partition id: ${JSON.stringify(id)}`);
  return t;
}
