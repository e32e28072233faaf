/**
 * Folder dates are wall-clock times in the job's time zone (IANA name, default UTC).
 * This module maps between instants and partition ids with Intl.DateTimeFormat, so it
 * needs no time-zone database of its own.
 *
 * Around DST changes:
 * - a wall time skipped by a spring-forward (02:00 on a spring day in New York) has no
 *   instant: that hour partition does not exist and next/previous step over it;
 * - a wall time repeated by a fall-back (01:00 on an autumn day in New York) has two
 *   instants: the one folder `01` covers both hours; its start is the earlier instant;
 * - a day skipped entirely (Pacific/Apia, 2011-12-30) does not exist either.
 */
import { ConfigError } from '../errors.js';
import { formatId, parseId, stepWall, utcMs, type Granularity, type WallTime } from './calendar.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** No real zone has two transitions this close, so stepping never needs more tries. */
const MAX_STEPS = 48;

/** A time zone that partition folders are read in. */
export class PartitionClock {
  readonly zone: string;
  private readonly fmt: Intl.DateTimeFormat | null;

  /** Throws ConfigError (field `discover.timezone`) for a name Intl does not know. */
  constructor(zone = 'UTC') {
    this.zone = zone;
    this.fmt = zone === 'UTC' ? null : formatterFor(zone);
  }

  /** The id of the partition (of `granularity`) that `instant` falls in. */
  partitionOf(instant: Date, granularity: Granularity): string {
    const naive = this.naive(instant.getTime());
    const d = new Date(naive);
    const t: WallTime = {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
    };
    if (granularity === 'hour') t.hour = d.getUTCHours();
    return formatId(t);
  }

  /**
   * Instants whose wall clock reads exactly the start of partition `id` (its hour, or
   * midnight): none in a DST gap, two in a repeated hour, otherwise one; ascending.
   */
  instantsOf(id: string): Date[] {
    const wall = utcMs(mustParse(id));
    return this.exactInstants(wall).map((ms) => new Date(ms));
  }

  /**
   * The first instant inside partition `id`, or null when no instant falls inside it
   * (an hour skipped by DST, a day skipped by a zone change).
   */
  startOf(id: string): Date | null {
    const t = mustParse(id);
    const wall = utcMs(t);
    const exact = this.exactInstants(wall);
    if (exact.length > 0) return new Date(exact[0]!);
    // The start is in a gap: the partition begins when the clock jumps, if it jumps into it.
    const jump = this.firstInstantAtOrAfter(wall);
    if (jump === null) return null;
    const unit = t.hour === undefined ? DAY_MS : HOUR_MS;
    return this.naive(jump) < wall + unit ? new Date(jump) : null;
  }

  /** True when some instant falls inside partition `id`. */
  exists(id: string): boolean {
    return this.fmt === null || this.startOf(id) !== null;
  }

  /** The partition `n` steps after `id` (negative: before), skipping partitions that do not exist. */
  step(id: string, n: number): string {
    let t = mustParse(id);
    const dir = n < 0 ? -1 : 1;
    for (let left = Math.abs(n); left > 0; left--) {
      let tries = 0;
      do {
        t = stepWall(t, dir);
        if (++tries > MAX_STEPS)
          throw new Error(`[discovery] no existing partition near ${id} in ${this.zone}`);
      } while (!this.exists(formatId(t)));
    }
    return formatId(t);
  }

  /** Wall-clock milliseconds (the zone's local time read as UTC) of an instant. */
  private naive(ms: number): number {
    if (this.fmt === null) return ms;
    const parts: Record<string, number> = {};
    for (const p of this.fmt.formatToParts(new Date(ms))) {
      if (p.type !== 'literal') parts[p.type] = Number(p.value);
    }
    const whole = utcMs({
      year: parts.year!,
      month: parts.month!,
      day: parts.day!,
      hour: parts.hour!,
      minute: parts.minute!,
      second: parts.second!,
    });
    return whole + (((ms % 1000) + 1000) % 1000);
  }

  /** Candidate instants for a wall time: the wall time minus each offset in force nearby. */
  private candidates(wall: number): number[] {
    const offsets = new Set([wall - DAY_MS, wall, wall + DAY_MS].map((ms) => this.naive(ms) - ms));
    return [...offsets].map((o) => wall - o).sort((a, b) => a - b);
  }

  private exactInstants(wall: number): number[] {
    return this.candidates(wall).filter((ms) => this.naive(ms) === wall);
  }

  /** First instant whose wall clock reads `wall` or later (binary search across a forward jump). */
  private firstInstantAtOrAfter(wall: number): number | null {
    const cands = this.candidates(wall);
    let lo = cands[0]!;
    let hi = cands[cands.length - 1]!;
    if (this.naive(lo) >= wall || this.naive(hi) < wall) return null;
    while (hi - lo > 1000) {
      // lo and hi are whole seconds (whole-hour walls minus whole-second offsets).
      const mid = lo + Math.max(1000, Math.floor((hi - lo) / 2000) * 1000);
      if (this.naive(mid) >= wall) hi = mid;
      else lo = mid;
    }
    return hi;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let fmt = formatters.get(zone);
  if (fmt) return fmt;
  try {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch (err) {
    throw new ConfigError(
      `[discovery] unknown time zone ${JSON.stringify(zone)} (expected an IANA name such as Europe/Berlin)`,
      { field: 'discover.timezone' },
      err,
    );
  }
  formatters.set(zone, fmt);
  return fmt;
}

function mustParse(id: string): WallTime {
  const t = parseId(id);
  if (!t) throw new Error(`[discovery] not a partition id: ${JSON.stringify(id)}`);
  return t;
}
