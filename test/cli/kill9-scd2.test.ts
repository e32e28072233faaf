/**
 * `kill -9` of the real CLI process in scd2 mode: random versions and deletes of a few keys, out
 * of order (late versions and deletes land in older day partitions, some rows twice), delivered in
 * rounds of files over several partitions, one commit per file. Each round's run is killed with
 * SIGKILL at a moment drawn over its work phase (from its first log line to 1.5 × an uninterrupted
 * run), so kills land in discovery, load, the MERGE's data files and the commit. After every kill
 * the table passes the invariant check at every version (checkTarget); at the end the job is rerun
 * until it succeeds, and the table's full history equals the in-order oracle (scd2Oracle: every
 * event arriving in order by seq), which holds only if each batch's versions and its watermark
 * commit together and a rerun neither skips nor re-applies a file.
 *
 * 3 kills by default (a few seconds); TIDEMARK_KILLS=20 for a longer soak. The seed is printed on
 * failure; TIDEMARK_KILL_SEED replays a sequence. Local source and target (the s3rver path is
 * ./kill9.test.ts's); each step has a limit scaled to the machine (test/helpers/machine.ts).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { prng } from '../../scripts/lib/prng.js';
import { sleep } from '../helpers/cli.js';
import { stepBudget, withinStep } from '../helpers/machine.js';
import {
  checkTarget,
  cleanup,
  DuckSession,
  land,
  makeConfig,
  scd2History,
  scd2Oracle,
  scd2Row,
  tempDir,
  type OrderRow,
  type Scd2Event,
} from '../job/helpers.js';
import { spawnCli, type CliProcess } from './process.js';

const KILLS = Number(process.env['TIDEMARK_KILLS'] ?? 3);
/** Files landed per round (and one event replayed in the last of them). */
const FILES_PER_ROUND = 3;
/** Rows per file. */
const ROWS_PER_FILE = 3;
/** Limit of one step (land, start, kill or finish, check) on a quiet machine, where it takes 1–2 s. */
const STEP_MS = 30_000;
/** Reruns the final step may need (each run loads what is left; one should do). */
const FINAL_RUNS = 3;

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

describe('killing the tidemark process in scd2 mode', () => {
  it(
    `${KILLS} SIGKILLs over the work phase of runs landing late versions and deletes, then reruns: the full history equals the in-order oracle`,
    { timeout: stepBudget(KILLS + 1 + FINAL_RUNS, STEP_MS) },
    async () => {
      const seed = Number(process.env['TIDEMARK_KILL_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
      const random = prng(seed);
      const pick = (n: number) => Math.floor(random() * n);
      const where = `(kill seed ${seed})`;
      const src = await tempDir('kill-scd2-src', dirs);
      const dst = await tempDir('kill-scd2-dst', dirs);
      const job = {
        name: 'orders',
        source: {
          uri: src,
          discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 60 },
        },
        target: {
          uri: dst,
          mode: 'scd2',
          key: ['order_id'],
          orderBy: 'seq',
          deleteWhen: "status = 'deleted'",
        },
        maxFilesPerBatch: 1,
      };
      const configPath = path.join(await tempDir('kill-scd2-cfg', dirs), 'tidemark.yaml');
      await fsp.writeFile(configPath, JSON.stringify({ jobs: [job] }));
      const setup = makeConfig(job);
      const args = ['run', '--config', configPath, '--json'];
      const source = new LocalStorage(src);

      // Distinct (key, seq) events of three keys, about one in four a delete; seqs are drawn from a
      // range that grows with the rounds, so later rounds bring both newer and late (older) versions.
      const events: Scd2Event[] = [];
      const seen = new Set<string>();
      const draw = (round: number): Scd2Event => {
        for (;;) {
          const e = { id: 1 + pick(3), seq: 1 + pick(10 * (round + 1)), deleted: pick(4) === 0 };
          if (seen.has(`${e.id}/${e.seq}`)) continue;
          seen.add(`${e.id}/${e.seq}`);
          events.push(e);
          return e;
        }
      };
      let fileNo = 0;
      /** A round of files, each in a day partition drawn from the round's days or earlier ones (late files). */
      const landRound = async (round: number) => {
        for (let f = 0; f < FILES_PER_ROUND; f++) {
          const rows: OrderRow[] = Array.from({ length: ROWS_PER_FILE }, () =>
            scd2Row(draw(round)),
          );
          if (f === FILES_PER_ROUND - 1) rows.push(scd2Row(events[pick(events.length)]!));
          const day = 1 + pick(2 * (round + 1));
          const key = `2025/01/${String(day).padStart(2, '0')}/f${fileNo++}.csv`;
          await land(source, session, key, rows);
        }
      };

      let proc: CliProcess | undefined;
      const step = <T>(what: string, work: () => Promise<T>) =>
        withinStep(`${where} ${what}`, STEP_MS, work, () => proc?.child.kill('SIGKILL'));
      const expectConsistent = async (what: string) =>
        expect((await checkTarget(session, setup)).problems, `${where} ${what}`).toEqual([]);

      // An uninterrupted run measures the work phase: from the first log line to the exit.
      const workMs = await step('round 0 (the uninterrupted run)', async () => {
        await landRound(0);
        const first = (proc = spawnCli(args));
        let workStart = 0;
        first.child.stderr!.once('data', () => (workStart = Date.now()));
        const exit = await first.done;
        expect(exit.code, exit.stderr).toBe(0);
        return Math.max(300, Date.now() - workStart);
      });

      let kills = 0;
      let finishedBeforeKill = 0;
      // Runs drawn late finish before their kill; keep landing rounds until KILLS kills.
      for (let round = 1; kills < KILLS && round < 3 * KILLS + 5; round++) {
        await step(`round ${round} (kill ${kills + 1})`, async () => {
          await landRound(round);
          const running = (proc = spawnCli(args));
          await new Promise<void>((resolve) =>
            running.child.stderr!.once('data', () => resolve()).once('close', () => resolve()),
          );
          // A run that ends before its kill moment is not waited for any longer.
          await Promise.race([
            sleep((((round - 1 + random()) % KILLS) / KILLS) * workMs * 1.5),
            running.done,
          ]);
          const killed = running.child.exitCode === null && running.child.kill('SIGKILL');
          const exit = await running.done;
          if (killed && exit.signal === 'SIGKILL') kills++;
          else {
            finishedBeforeKill++;
            expect(exit.code, `${where} ${exit.stderr}`).toBe(0);
          }
          await expectConsistent(`after kill ${kills}`);
        });
      }
      expect(kills, `${where}: ${finishedBeforeKill} runs finished before their kill`).toBe(KILLS);

      // Rerun until a run succeeds (the first should: nothing is left mid-commit).
      let code: number | null = null;
      for (let r = 0; r < FINAL_RUNS && code !== 0; r++) {
        const exit = await step(`final run ${r + 1}`, () => (proc = spawnCli(args)).done);
        code = exit.code;
        if (r === FINAL_RUNS - 1) expect(code, `${where} ${exit.stderr}`).toBe(0);
      }
      expect(await scd2History(session, setup), where).toEqual(scd2Oracle(events));
      await expectConsistent('after the final run');
    },
  );
});
