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

/** Find the partition folders in [from, until] and list their objects. */
export async function walkPartitions(storage: Storage, layout: Layout, opts: WalkOptions): Promise<PartitionWalk> {
  const limit = pLimit(opts.concurrency);
  const from = opts.from ? mustParse(opts.from) : null;
  const walk: PartitionWalk = { partitions: [], skippedFolders: [], strayObjects: [], serverTime: new Date(NaN), listRequests: 0 };
  let until: string | null = null;

  const list = (listOpts: ListOptions) =>
    limit(async () => {
      const objects: ObjectInfo[] = [];
      const prefixes: string[] = [];
      for await (const page of storage.list({ ...listOpts, signal: opts.signal })) {
        walk.listRequests++;
        if (Number.isNaN(walk.serverTime.getTime())) walk.serverTime = page.serverTime;
        objects.push(...page.objects);
        prefixes.push(...page.commonPrefixes);
      }
      until ??= opts.until(walk.serverTime);
      return { objects, prefixes };
    });

  let nodes: Node[] = [{ prefix: '', fields: {} }];
  for (let index = 0; index < layout.levels.length; index++) {
    const level = layout.levels[index]!;
    if (level.pattern === null) {
      nodes = nodes.map((n) => ({ prefix: `${n.prefix}${level.template}/`, fields: n.fields }));
      continue;
    }
    const unitsAbove = index === 0 ? 0 : layout.levels[index - 1]!.unitsThrough;
    const listings = await Promise.all(
      nodes.map((node) => {
        const onEdge = from !== null && partialId(node.fields, unitsAbove) === partialId(from, unitsAbove);
        const startAfter = onEdge ? node.prefix + layout.formatLevel(index, from) : undefined;
        return list({ prefix: node.prefix, delimiter: '/', startAfter }).then((l) => ({ node, ...l }));
      }),
    );
    const next: Node[] = [];
    for (const { node, objects, prefixes } of listings) {
      walk.strayObjects.push(...objects);
      for (const prefix of prefixes) {
        const child = classifyChild(layout, index, node, prefix, { from, until: until! });
        if ('reason' in child) {
          if (child.reason !== null) walk.skippedFolders.push({ prefix, reason: child.reason });
        } else next.push(child);
      }
    }
    nodes = next;
  }

  walk.partitions = await Promise.all(
    nodes.map(async (node) => ({
      id: partialId(node.fields, layout.granularity === 'hour' ? 4 : 3),
      prefix: node.prefix,
      objects: (await list({ prefix: node.prefix })).objects,
    })),
  );
  walk.partitions.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return walk;
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
  if (name.startsWith('_') || name.startsWith('.')) return { reason: 'not data (name starts with _ or .)' };
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
