/**
 * A seeded daily orders feed for the scale-out tests and the backfill benchmark: each day's
 * folder (`yyyy/mm/dd/`) gets CSV files holding new orders of that day and status changes of
 * orders created on earlier days. A row's `order_date` is its order's creation day, so a table
 * partitioned by it takes a day's updates in older partitions too, as real feeds do. Every row
 * has a unique `rid` and a `seq` that grows with every change, so the expected table is the row
 * with the highest `seq` per `order_id` (`latestByOrder`).
 */
import type { Storage } from '../../src/storage/storage.js';

/** One landed row. */
export interface FeedRow {
  order_id: number;
  order_date: string;
  status: string;
  seq: number;
  rid: string;
}

export interface FeedOptions {
  /** Days to land, `yyyy-mm-dd`, oldest first. */
  days: readonly string[];
  /** New orders per day (their ids follow `idBase`). */
  ordersPerDay: number;
  /** Status changes per day of orders created before it (none on the first day). */
  updatesPerDay: number;
  /** Updates touch orders of the last this many days (default: any earlier day). */
  updateWindowDays?: number;
  /** Files each day's rows are spread over. */
  filesPerDay: number;
  /** First order id (keeps two regions' keys apart). */
  idBase: number;
  /** Prefix of every rid and file name (unique per feed, and per delivery of a feed). */
  tag: string;
  /** Seeded random numbers in [0, 1). */
  random: () => number;
}

/** What a feed lands: its files (key → rows) and all their rows. */
export interface Feed {
  files: Map<string, FeedRow[]>;
  rows: FeedRow[];
}

const STATUSES = ['paid', 'packed', 'shipped', 'delivered', 'returned'];
let seqCounter = 0;

/** Build a feed's files (nothing is written). `seq` grows across every feed of the process. */
export function buildFeed(opts: FeedOptions): Feed {
  const files = new Map<string, FeedRow[]>();
  const rows: FeedRow[] = [];
  const created: Array<{ id: number; date: string }> = [];
  let nextId = opts.idBase;
  let ridCounter = 0;
  const rid = () => `${opts.tag}-${++ridCounter}`;
  for (const day of opts.days) {
    const today: FeedRow[] = [];
    for (let i = 0; i < opts.ordersPerDay; i++)
      today.push({
        order_id: nextId++,
        order_date: day,
        status: 'placed',
        seq: ++seqCounter,
        rid: rid(),
      });
    const window =
      opts.updateWindowDays === undefined
        ? created
        : created.filter((o) => dayDiff(o.date, day) <= opts.updateWindowDays!);
    for (let i = 0; i < opts.updatesPerDay && window.length > 0; i++) {
      const o = window[Math.floor(opts.random() * window.length)]!;
      today.push({
        order_id: o.id,
        order_date: o.date,
        status: STATUSES[Math.floor(opts.random() * STATUSES.length)]!,
        seq: ++seqCounter,
        rid: rid(),
      });
    }
    for (const r of today)
      if (r.status === 'placed') created.push({ id: r.order_id, date: r.order_date });
    const folder = day.replaceAll('-', '/');
    for (let f = 0; f < opts.filesPerDay; f++) {
      const part = today.filter((_, i) => i % opts.filesPerDay === f);
      if (part.length > 0) files.set(`${folder}/${opts.tag}-${f}.csv`, part);
    }
    rows.push(...today);
  }
  return { files, rows };
}

/**
 * Corrections re-delivered into existing day folders (what a backfill reloads): per day, new
 * rows for `perDay` random orders of the earlier feed (of the last `windowDays` days), with a
 * newer `seq`.
 */
export function buildCorrections(
  earlier: Feed,
  days: readonly string[],
  perDay: number,
  tag: string,
  random: () => number,
  windowDays = Infinity,
): Feed {
  const files = new Map<string, FeedRow[]>();
  const rows: FeedRow[] = [];
  let ridCounter = 0;
  for (const day of days) {
    const candidates = earlier.rows.filter(
      (r) => r.order_date <= day && dayDiff(r.order_date, day) <= windowDays,
    );
    if (candidates.length === 0) continue;
    const fixes: FeedRow[] = [];
    for (let i = 0; i < perDay; i++) {
      const o = candidates[Math.floor(random() * candidates.length)]!;
      fixes.push({
        order_id: o.order_id,
        order_date: o.order_date,
        status: `fixed-${tag}`,
        seq: ++seqCounter,
        rid: `${tag}-${++ridCounter}`,
      });
    }
    files.set(`${day.replaceAll('-', '/')}/${tag}.csv`, fixes);
    rows.push(...fixes);
  }
  return { files, rows };
}

function dayDiff(from: string, to: string): number {
  return (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000;
}

/** Write a feed's files as CSV. */
export async function landFeed(storage: Storage, feed: Feed): Promise<void> {
  for (const [key, rows] of feed.files) await storage.write(key, csvOf(rows));
}

function csvOf(rows: readonly FeedRow[]): string {
  return (
    [
      'order_id,order_date,status,seq,rid',
      ...rows.map((r) => `${r.order_id},${r.order_date},${r.status},${r.seq},${r.rid}`),
    ].join('\n') + '\n'
  );
}

/** The expected table: per order, the row with the highest seq; ordered by order_id. */
export function latestByOrder(rows: readonly FeedRow[]): FeedRow[] {
  const best = new Map<number, FeedRow>();
  for (const r of rows) {
    const cur = best.get(r.order_id);
    if (!cur || r.seq > cur.seq) best.set(r.order_id, r);
  }
  return [...best.values()].sort((a, b) => a.order_id - b.order_id);
}

/** `count` consecutive days from `first` (`yyyy-mm-dd`), as `yyyy-mm-dd`. */
export function daysFrom(first: string, count: number): string[] {
  const start = Date.parse(`${first}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) =>
    new Date(start + i * 86_400_000).toISOString().slice(0, 10),
  );
}
