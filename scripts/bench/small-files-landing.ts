/**
 * The small-files benchmark's landing zone: many small files of events, as Firehose, Kafka
 * Connect's S3 sink or a log shipper write them, in `{yyyy}/{mm}/{dd}` folders. File `f` holds
 * 1 to 100 rows (a fixed pseudo-random count); about 2 % of them repeat a recent event id with a
 * later time, so the dedupe has work. Written as CSV (plain) or NDJSON (gzip).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

export type SmallFormat = 'csv' | 'ndjson.gz';

/** Shape of a small-files zone. */
export interface SmallLandingSpec {
  root: string;
  format: SmallFormat;
  files: number;
  filesPerDay: number;
}

/** One file's key (relative to the root) and rows. */
export interface SmallFile {
  key: string;
  rows: number;
}

export const EVENT_KEY = 'event_id';
export const EVENT_ORDER = 'ts';

const START = Date.parse('2026-01-01T00:00:00Z');

/** A small deterministic hash (so every run writes the same zone). */
function mix(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35)) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0x27d4eb2d) >>> 0;
  return (h ^ (h >>> 15)) >>> 0;
}

/** Rows of file `f`: 1..100. */
export function rowsOf(f: number): number {
  return 1 + (mix(f, 1) % 100);
}

interface Event {
  event_id: number;
  device: string;
  reading: string;
  ts: string;
}

/** File `f`'s events: fresh ids numbered after the previous files', and repeats of recent ids a minute later. */
function eventsOf(f: number, firstId: number): Event[] {
  const n = rowsOf(f);
  const base = START + f * 60_000;
  return Array.from({ length: n }, (_, j) => {
    const repeat = firstId > 200 && mix(f, j) % 50 === 0;
    const id = repeat ? firstId - 1 - (mix(j, f) % 200) : firstId + j;
    const ms = base + j * 10 + (repeat ? 30_000 : 0);
    return {
      event_id: id,
      device: `dev-${mix(id, 7) % 1000}`,
      reading: (((mix(id, f) % 1_000_000) - 500_000) / 100).toFixed(2),
      ts: new Date(ms).toISOString(),
    };
  });
}

function render(format: SmallFormat, events: readonly Event[]): Buffer {
  if (format === 'csv')
    return Buffer.from(
      `event_id,device,reading,ts\n${events.map((e) => `${e.event_id},${e.device},${e.reading},${e.ts}`).join('\n')}\n`,
    );
  const lines = events
    .map(
      (e) =>
        `{"event_id":${e.event_id},"device":"${e.device}","reading":${e.reading},"ts":"${e.ts}"}`,
    )
    .join('\n');
  return gzipSync(Buffer.from(`${lines}\n`));
}

/** `yyyy/mm/dd/events-NNNNNN.<ext>` of file `f`. */
export function smallKey(spec: SmallLandingSpec, f: number): string {
  const day = new Date(START + Math.floor(f / spec.filesPerDay) * 86_400_000)
    .toISOString()
    .slice(0, 10)
    .split('-');
  return `${day.join('/')}/events-${String(f).padStart(6, '0')}.${spec.format}`;
}

/** Write the zone; returns its files in order. */
export async function writeSmallLanding(spec: SmallLandingSpec): Promise<SmallFile[]> {
  const out: SmallFile[] = [];
  let nextId = 1;
  for (let f = 0; f < spec.files; f++) {
    const events = eventsOf(f, nextId);
    nextId += events.length;
    const key = smallKey(spec, f);
    const path = join(spec.root, ...key.split('/'));
    if (f % spec.filesPerDay === 0) await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, render(spec.format, events));
    out.push({ key, rows: events.length });
  }
  return out;
}
