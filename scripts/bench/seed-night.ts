/**
 * `seed-night`, the child process of `npm run bench -- seed-scale` (not for direct use): one real
 * run of the orders job (`runJob`, as the CLI runs it) over the night's landing folder into the
 * table, its figures printed as one JSON line.
 *
 * The S3 requests the run would send: the local store's calls are counted by kind, as the S3
 * driver counts its requests (a listing page is one LIST, a delete of up to 1,000 keys one
 * request), and each file read in place (`localPath`, where S3 would download it whole first:
 * src/engine/merge/localize.ts) counts as one GET of its size. LocalStorage's methods are wrapped
 * in this process only, the way ./sql-trace.ts wraps the DuckDB session.
 */
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { PhaseTimings } from '../../src/job/phases.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { RequestCounts } from '../../src/storage/storage.js';
import { ordersJob, runOrdersJob } from './job.js';

/** What the child prints. */
export interface NightResult {
  ms: number;
  status: string;
  rowsRead: number;
  rowsAfterDedupe: number;
  commits: number;
  phases: PhaseTimings;
  requests: RequestCounts;
  /** Bytes S3 would send for the GETs. */
  getBytes: number;
}

const counts: RequestCounts = { list: 0, get: 0, put: 0, head: 0, delete: 0 };
let getBytes = 0;
const readInPlace = new Set<string>();

function countCalls(): void {
  const proto = LocalStorage.prototype as unknown as Record<string, (...args: any[]) => any>;
  const wrap = (name: string, count: (args: any[], self: LocalStorage) => void) => {
    const orig = proto[name]!;
    proto[name] = function (this: LocalStorage, ...args: any[]) {
      count(args, this);
      return orig.apply(this, args);
    };
  };
  const origList = proto['list']!;
  proto['list'] = async function* (this: LocalStorage, ...args: any[]) {
    for await (const page of origList.apply(this, args) as AsyncIterable<unknown>) {
      counts.list++;
      yield page;
    }
  };
  wrap('head', () => counts.head++);
  for (const name of ['read', 'readStream', 'download']) wrap(name, () => counts.get++);
  for (const name of ['write', 'upload', 'writeIfAbsent']) wrap(name, () => counts.put++);
  wrap('delete', (args) => (counts.delete += Math.ceil((args[0] as string[]).length / 1000)));
  const origLocalPath = proto['localPath']!;
  proto['localPath'] = function (this: LocalStorage, key: string) {
    const path = origLocalPath.call(this, key) as string | null;
    const id = `${this.uri}/${key}`;
    if (path !== null && !readInPlace.has(id)) {
      readInPlace.add(id);
      counts.get++;
      try {
        getBytes += statSync(path).size;
      } catch {
        // asked for a file that does not exist (yet): no GET
        counts.get--;
        readInPlace.delete(id);
      }
    }
    return path;
  };
}

export async function seedNight(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { landing: { type: 'string' }, target: { type: 'string' }, spool: { type: 'string' } },
  });
  if (!values.landing || !values.target || !values.spool)
    throw new Error('[bench] seed-night needs --landing, --target and --spool');
  countCalls();
  const j = ordersJob({
    name: 'orders',
    source: values.landing,
    target: values.target,
    spoolRoot: values.spool,
    maxFilesPerBatch: 100_000,
    maxBytesPerBatch: 1024 ** 4,
  });
  const { ms, report } = await runOrdersJob(j);
  const result: NightResult = {
    ms,
    status: report.status,
    rowsRead: report.rowsRead,
    rowsAfterDedupe: report.rowsAfterDedupe,
    commits: report.commits,
    phases: report.phases,
    requests: counts,
    getBytes,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
