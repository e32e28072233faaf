/**
 * `tidemark run` processes on the same jobs at once (sources on s3rver, each process downloading
 * its batches; local targets, so put-if-absent is real):
 * commits race, the loser of each race re-reads the winner's commit and plans again. Three
 * processes rather than two: more races per run (two processes hit a duplicate-load bug, now
 * fixed, one time in twenty; test/job/run-job.rival.test.ts pins it down deterministically).
 * At the end every file is loaded exactly once, in append mode (row ids) and in merge mode,
 * every process succeeds, and the table versions are contiguous.
 *
 * Three steps (land the files, the three processes, read the tables), each with a limit scaled to
 * the machine (test/helpers/machine.ts); processes still running at their limit are killed.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/job/report.js';
import { stepBudget, withinStep } from '../helpers/machine.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  openS3JobEnv,
  orders,
  readTarget,
  sortRows,
  tempDir,
  type OrderRow,
} from '../job/helpers.js';
import { spawnCli } from './process.js';

let session: DuckSession;
let s3: S3rverHandle;
const dirs: string[] = [];
/** Limit of each step on a quiet machine, where landing takes about 2 s and the three processes 6–12 s. */
const STEP_MS = 40_000;

// The child processes inherit the s3rver credentials openS3JobEnv puts in the environment.
beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});

afterAll(() => closeS3JobEnv(s3, session, dirs));

async function versionsOf(root: string): Promise<number[]> {
  const names = await fsp.readdir(path.join(root, '_delta_log'));
  return names
    .filter((n) => /^\d{20}\.json$/.test(n))
    .map((n) => Number(n.slice(0, 20)))
    .sort((a, b) => a - b);
}

describe('concurrent tidemark runs of the same jobs', () => {
  it(
    'three processes at once load every file exactly once; all exit 0; versions are contiguous',
    { timeout: stepBudget(3, STEP_MS) },
    async () => {
      const { source, uri: sourceRoot, storageConfig: storage } = s3.landingZone('conc-src');
      const landed: OrderRow[] = [];
      let seq = 0;
      const files = 24;
      await withinStep('landing the files', STEP_MS, async () => {
        for (let i = 0; i < files; i++) {
          const rows = orders([i % 9, `s${seq}`, ++seq], [(i * 5) % 9, `s${seq}`, ++seq]);
          await land(
            source,
            session,
            `2025/02/${String(1 + (i % 4)).padStart(2, '0')}/f${i}.${['csv', 'parquet', 'ndjson'][i % 3]}`,
            rows,
          );
          landed.push(...rows);
        }
      });
      const [mergeRoot, appendRoot] = [
        await tempDir('conc-merge', dirs),
        await tempDir('conc-append', dirs),
      ];
      const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };
      const jobs = [
        {
          name: 'events',
          source: { uri: sourceRoot, discover: byDay },
          target: { uri: appendRoot, mode: 'append' },
          maxFilesPerBatch: 1,
        },
        {
          name: 'latest',
          source: { uri: sourceRoot, discover: { by: 'modified' } },
          target: { uri: mergeRoot, key: ['order_id'], orderBy: 'seq' },
          maxFilesPerBatch: 2,
        },
      ];
      const configDir = await tempDir('conc-cfg', dirs);
      const configPath = path.join(configDir, 'tidemark.yaml');
      await fsp.writeFile(configPath, JSON.stringify({ storage, jobs }));

      const procs = [0, 1, 2].map(() => spawnCli(['run', '--config', configPath, '--json']));
      const exits = await withinStep(
        'three concurrent runs',
        STEP_MS,
        () => Promise.all(procs.map((p) => p.done)),
        () => {
          for (const p of procs) p.child.kill('SIGKILL');
        },
      );
      const reports = exits.map((e) =>
        e.stdout
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as RunReport),
      );
      for (const [i, e] of exits.entries()) expect(e.code, `process ${i}: ${e.stderr}`).toBe(0);

      const events = await readTarget(session, makeConfig(jobs[0]!));
      expect(duplicateRids(events.rows)).toEqual([]);
      expect(events.rows).toEqual(sortRows(landed));
      expect(events.state.totals.filesLoaded).toBe(files);
      const latest = await readTarget(session, makeConfig(jobs[1]!));
      expect(latest.rows).toEqual(expectedLatest(landed));
      expect(latest.state.totals.filesLoaded).toBe(files);

      for (const [job, root] of [
        ['events', appendRoot],
        ['latest', mergeRoot],
      ] as const) {
        const perProcess = reports.map((r) => r.find((x) => x.job === job)!);
        // Between them, the processes loaded each file once, and made one commit per version.
        expect(
          perProcess.reduce((n, r) => n + r.filesLoaded, 0),
          job,
        ).toBe(files);
        const versions = await versionsOf(root);
        expect(versions).toEqual(versions.map((_, i) => i));
        expect(
          perProcess.reduce((n, r) => n + r.commits, 0),
          job,
        ).toBe(versions.length);
      }
    },
  );
});
