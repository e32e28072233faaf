/**
 * The Prometheus metrics file of real runs: written after each job (atomically: no temp file
 * left), parsed back, its values those of the run report; a failed run sets run_success 0; the
 * watermark lag counts from the end of the watermark partition.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { watermarkLagSeconds } from '../../src/observe/metrics.js';
import { cleanup, DuckSession, tempDir } from '../job/helpers.js';
import { cli, orderJob } from './cli-helpers.js';

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

/** `name{labels} value` lines of a text-format file, keyed by name and labels as written. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(\S+?)(\{.*\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

describe('metrics file', () => {
  it('a run writes rows, files, bytes, duration, success, phases and watermark lag of its report', async () => {
    const dir = await tempDir('obs-metrics', dirs);
    const { config } = await orderJob(session, dirs, {
      metrics: { file: path.join(dir, 'prom', '{job}.prom') },
    });
    const r = await cli(['run', '--config', config, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Record<string, number> & {
      phases: Record<string, number>;
    };

    expect(await fsp.readdir(path.join(dir, 'prom'))).toEqual(['orders.prom']);
    const text = await fsp.readFile(path.join(dir, 'prom', 'orders.prom'), 'utf8');
    expect(text).toContain('# TYPE tidemark_rows_total counter');
    expect(text).toContain('# TYPE tidemark_run_duration_seconds gauge');
    const s = samples(text);
    expect(s.get('tidemark_rows_total{job="orders",kind="read"}')).toBe(3);
    expect(s.get('tidemark_rows_total{job="orders",kind="inserted"}')).toBe(report['inserted']);
    expect(s.get('tidemark_rows_total{job="orders",kind="updated"}')).toBe(report['updated']);
    expect(s.get('tidemark_rows_total{job="orders",kind="deleted"}')).toBe(0);
    expect(s.get('tidemark_files_total{job="orders",kind="loaded"}')).toBe(2);
    expect(s.get('tidemark_bytes_total{job="orders"}')).toBeGreaterThan(0);
    expect(s.get('tidemark_commits_total{job="orders"}')).toBe(2);
    expect(s.get('tidemark_run_success{job="orders"}')).toBe(1);
    expect(s.get('tidemark_run_duration_seconds{job="orders"}')).toBeCloseTo(
      report['durationMs']! / 1000,
      3,
    );
    expect(s.get('tidemark_phase_duration_seconds{job="orders",phase="merge"}')).toBeCloseTo(
      report.phases['merge']! / 1000,
      3,
    );
    expect(s.get('tidemark_table_version{job="orders"}')).toBe(1);
    // The watermark is 2025-05-02: it ends at 2025-05-03T00:00Z.
    const lag = s.get('tidemark_watermark_lag_seconds{job="orders"}')!;
    expect(Math.abs(lag - (Date.now() - Date.parse('2025-05-03T00:00:00Z')) / 1000)).toBeLessThan(
      60,
    );

    // A failing run rewrites the file: success 0, the rows of that run.
    const cfg = JSON.parse(await fsp.readFile(config, 'utf8')) as {
      jobs: Array<{ source: { uri: string } }>;
    };
    await fsp.writeFile(path.join(cfg.jobs[0]!.source.uri, '2025/05/02/c.ndjson'), '{"order_id": ');
    const failed = await cli(['run', '--config', config]);
    expect(failed.code).toBe(1);
    const after = samples(await fsp.readFile(path.join(dir, 'prom', 'orders.prom'), 'utf8'));
    expect(after.get('tidemark_run_success{job="orders"}')).toBe(0);
    expect(after.get('tidemark_rows_total{job="orders",kind="read"}')).toBe(0);
    expect(await fsp.readdir(path.join(dir, 'prom'))).toEqual(['orders.prom']);
  });

  it('a metrics file that cannot be written (under /proc) is a warning naming it; the run ends with exit 0 and its report', async () => {
    const file = '/proc/nope/m.prom';
    const { config } = await orderJob(session, dirs, { metrics: { file } });
    // Node's recursive mkdir loops forever on /proc/nope: the run used to hang after its commit.
    const r = await cli(['run', '--config', config, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    const warning = r.stderr.split('\n').find((l) => l.includes('metrics file not written'));
    expect(warning).toBeDefined();
    expect(warning).toContain('/proc/nope');
  }, 20_000);

  it('watermark lag: partition mode counts from the end of the partition in its zone; modified mode from the watermark', () => {
    const base = { storage: {}, jobs: [] as unknown[] };
    const job = (discover: Record<string, unknown>) =>
      validateConfig({
        ...base,
        jobs: [
          { name: 'j', source: { uri: '/s', discover }, target: { uri: '/t', mode: 'append' } },
        ],
      }).jobs[0]!;
    const now = new Date('2026-11-30T12:00:00Z');
    expect(
      watermarkLagSeconds(job({ by: 'partition', layout: '{yyyy}/{mm}/{dd}' }), '2026-11-29', now),
    ).toBe(12 * 3600);
    expect(
      watermarkLagSeconds(
        job({ by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' }),
        '2026-11-30T10',
        now,
      ),
    ).toBe(3600);
    expect(
      watermarkLagSeconds(
        job({ by: 'partition', layout: '{yyyy}/{mm}/{dd}', timezone: 'America/New_York' }),
        '2026-11-29',
        now,
      ),
    ).toBe(7 * 3600);
    expect(watermarkLagSeconds(job({ by: 'modified' }), '2026-11-30T11:59:00.000Z', now)).toBe(60);
    expect(watermarkLagSeconds(job({ by: 'modified' }), null, now)).toBeNull();
  });
});
