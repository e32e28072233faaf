/**
 * The `optimize` and `vacuum` commands mounted on a bare commander program (main.ts wires them
 * the same way): config file in, one report per job out, exit codes by error class.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMaintenanceCommands } from '../../src/cli/commands/maintenance.js';
import type { CliIO } from '../../src/cli/main.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { silentLogger } from '../../src/log/logger.js';
import { append, localBackend, type Place } from './helpers.js';

let session: DuckSession;
let place: Place;
let config: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  place = await localBackend.place();
  const table = place.open(session);
  for (const from of [0, 10, 20]) {
    await append(session, table, `SELECT (${from} + range)::BIGINT AS id, 'x' AS p FROM range(5)`, [
      'p',
    ]);
  }
  const dir = place.dir!;
  config = path.join(dir, '_tidemark', 'tidemark.yaml');
  await fsp.mkdir(path.dirname(config), { recursive: true });
  const job = {
    name: 'events',
    source: { uri: path.join(dir, 'landing'), discover: { by: 'modified' } },
    target: { uri: dir, mode: 'append' },
  };
  await fsp.writeFile(config, JSON.stringify({ jobs: [job] }));
});
afterAll(async () => {
  session?.close();
  await place?.cleanup();
});

/** Parse argv on a program holding only the maintenance commands. */
async function cli(argv: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  let code = 0;
  const io: CliIO = {
    stdout: { write: (s) => void (stdout += s) },
    stderr: new PassThrough(),
    context: { logger: silentLogger() },
  };
  const program = new Command('tidemark').exitOverride();
  addMaintenanceCommands(program, { io, setExitCode: (c) => (code = c) });
  await program.parseAsync(argv, { from: 'user' });
  return { code, stdout };
}

describe('maintenance commands', () => {
  it('optimize compacts once, then has nothing to do', async () => {
    const first = await cli(['optimize', '-c', config, '--json']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      job: 'events',
      command: 'optimize',
      status: 'optimized',
      version: 3,
      filesRemoved: 3,
      filesAdded: 1,
    });
    const second = await cli(['optimize', '-c', config]);
    expect(second.stdout).toBe('events: optimize nothing-to-do (table version 3)\n');
  });

  it('vacuum refuses a short retention with the usage exit code, and dry-runs', async () => {
    const refused = await cli(['vacuum', '-c', config, '--retain', '1', '--json']);
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      status: 'failed',
      error: { type: 'ConfigError' },
    });
    const dry = await cli([
      'vacuum',
      '-c',
      config,
      '--retain',
      '0',
      '--unsafe-allow-short-retention',
      '--dry-run',
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /^events: vacuum dry-run: would delete 3 files .* retention 0 h, kept 1\n(    - p=x\/part-.*\.parquet\n){3}$/,
    );
  });
});
