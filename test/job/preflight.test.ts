/**
 * The pre-flight checks (src/job/preflight.ts) one by one: the pure parts without I/O (unknown
 * columns of a deleteWhen, problems from errors, validate's exit code), deleteWhen against DuckDB's
 * parser, the target's write probe and how its failures are classed, the did-you-mean of a
 * missing folder, and a run's checks on a real job (a missing source is refused before the target
 * is touched).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateExitCode } from '../../src/cli/commands/validate.js';
import { ConfigError, StorageError } from '../../src/errors.js';
import {
  deleteWhenProblems,
  nearbyName,
  probeWritable,
  problemOf,
  unknownColumns,
  type Problem,
} from '../../src/job/preflight.js';
import type { ValidateReport } from '../../src/job/validate.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import { failure } from '../helpers/cli.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { cleanup, DuckSession, makeConfig, mergeTarget, runOutcome, tempDir } from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

describe('unknownColumns (pure)', () => {
  const columns = ['order_id', 'status', 'Op', 'payload'];

  it('knows columns case-insensitively, and qualified references by any part', () => {
    expect(
      unknownColumns([['STATUS'], ['op'], ['t', 'order_id'], ['payload', 'field']], columns),
    ).toEqual([]);
  });

  it('names each unknown reference once, with the closest column', () => {
    expect(unknownColumns([['stauts'], ['stauts'], ['x', 'ordr_id'], ['zzz']], columns)).toEqual([
      { name: 'stauts', guess: 'status' },
      { name: 'x.ordr_id', guess: 'order_id' },
      { name: 'zzz', guess: null },
    ]);
  });
});

describe('deleteWhen against DuckDB', () => {
  const field = 'jobs[0].target.deleteWhen';

  it('an expression that does not parse, or is more than one, is a config problem', async () => {
    for (const expr of ["Op = 'D' AND", 'x; DROP TABLE t', 'x) FROM y --']) {
      const problems = await deleteWhenProblems(session, expr, null, field);
      expect(problems).toEqual([
        {
          check: 'deleteWhen',
          field,
          message: expect.stringContaining(`invalid deleteWhen expression ${JSON.stringify(expr)}`),
          kind: 'usage',
        },
      ]);
    }
  });

  it('without a table, only the parse is checked; with one, every column it names', async () => {
    expect(await deleteWhenProblems(session, "Op = 'D'", null, field)).toEqual([]);
    expect(
      await deleteWhenProblems(session, "Op = 'D' AND is_deleted", ['Op', 'id'], field),
    ).toEqual([
      {
        check: 'deleteWhen',
        field,
        message: `deleteWhen "Op = 'D' AND is_deleted" names column "is_deleted", which the target table does not have (its columns: Op, id)`,
        kind: 'usage',
      },
    ]);
    expect(
      await deleteWhenProblems(session, 'list_any(list_filter(tags, t -> t = 1))', ['tags'], field),
    ).toEqual([]);
  });
});

describe('the target write probe', () => {
  it('writes and deletes one object under _tidemark/, leaving nothing', async () => {
    const root = await tempDir('probe', dirs);
    const storage = countingStorage(new LocalStorage(root));
    await probeWritable(storage, 'orders');
    expect(storage.calls.map((c) => c.method)).toEqual(['write', 'delete']);
    expect(storage.calls[0]!.key).toMatch(/^_tidemark\/write-probe-[0-9a-f-]{36}$/);
    expect(await fsp.readdir(root)).toEqual([]);
  });

  it('a refused write is terminal (exit 1) naming the target; a store that does not answer fails with its own transient error (exit 4)', async () => {
    const failing = (err: Error): Storage =>
      ({
        ...new LocalStorage('/nonexistent'),
        uri: 's3://lake/orders/',
        write: () => Promise.reject(err),
      }) as unknown as Storage;
    const refused = new StorageError('[storage] S3 write failed …: AccessDenied, HTTP 403', {
      kind: 'terminal',
      context: { status: 403 },
    });
    const down = new StorageError('[storage] S3 storage unavailable after 6 attempts …', {
      kind: 'transient',
    });
    const a = await failure<StorageError>(probeWritable(failing(refused), 'orders'));
    expect(a).toMatchObject({
      kind: 'terminal',
      message: `[preflight] job orders: target s3://lake/orders/ is not writable: ${refused.message}`,
      cause: refused,
    });
    expect(a.context).toMatchObject({ status: 403, uri: 's3://lake/orders/' });
    expect(await failure<StorageError>(probeWritable(failing(down), 'orders'))).toBe(down);
  });
});

describe('problems and the exit code of validate', () => {
  it('problemOf keeps the error kind unless the check knows better', () => {
    expect(problemOf('source', 'f', new ConfigError('x'))).toEqual({
      check: 'source',
      field: 'f',
      message: 'x',
      kind: 'usage',
    });
    expect(problemOf('target', undefined, new Error('y'))).toEqual({
      check: 'target',
      message: 'y',
      kind: 'terminal',
    });
  });

  it('2 for any config problem, else 1, else 4 when only stores did not answer, else 0 (warnings aside)', () => {
    const p = (kind: Problem['kind']): Problem => ({ check: 'source', message: '', kind });
    const r = (...problems: Problem[]): ValidateReport => ({
      job: 'j',
      status: problems.length ? 'problems' : 'ok',
      problems,
      warnings: [p('terminal')],
    });
    expect(validateExitCode([r(), r()])).toBe(0);
    expect(validateExitCode([r(p('transient'))])).toBe(4);
    expect(validateExitCode([r(p('transient')), r(p('terminal'))])).toBe(1);
    expect(validateExitCode([r(p('transient'), p('terminal')), r(p('usage'))])).toBe(2);
  });
});

describe('nearbyName', () => {
  it('a sibling folder with a close name, or null', async () => {
    const dir = await tempDir('near', dirs);
    // Folders with something in them: like S3 prefixes, empty folders are not listed.
    for (const name of ['orders', 'clicks']) {
      await fsp.mkdir(path.join(dir, name));
      await fsp.writeFile(path.join(dir, name, 'x.csv'), 'x');
    }
    expect(await nearbyName(`file://${dir}/ordres/`)).toBe(path.join(dir, 'orders'));
    expect(await nearbyName(path.join(dir, 'invoices'))).toBeNull();
    expect(await nearbyName(path.join(dir, 'nowhere', 'orders'))).toBeNull();
  });
});

describe("a run's pre-flight", () => {
  it('a missing source is refused before the target is touched (no probe, no table folder)', async () => {
    const dir = await tempDir('pf', dirs);
    const target = path.join(dir, 'table');
    const setup = makeConfig({
      source: {
        uri: path.join(dir, 'landing'),
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
      },
      target: mergeTarget(target),
    });
    const outcome = await runOutcome(setup);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? null : outcome.error).toBeInstanceOf(ConfigError);
    await expect(fsp.stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
