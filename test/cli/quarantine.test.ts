/**
 * `onBadFile: quarantine` as an operator sees it: the run says which file it set aside and why
 * (human and --json), exits 0 because the rest loaded, and `tidemark status` keeps listing the
 * file with its error until it is fixed upstream.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { cleanup, tempDir } from '../job/helpers.js';
import { cli } from '../helpers/cli.js';

const dirs: string[] = [];
afterAll(() => cleanup(dirs));

describe('quarantine in the CLI', () => {
  it('run reports the quarantined file, status lists it (human and --json)', async () => {
    const sourceDir = await tempDir('q-src', dirs);
    const source = new LocalStorage(sourceDir);
    await source.write('2025/04/01/good.csv', 'id,seq\n1,1\n');
    await source.write('2025/04/01/broken.parquet', 'not parquet');
    const file = path.join(await tempDir('q-cfg', dirs), 'tidemark.yaml');
    const job = {
      name: 'orders',
      onBadFile: 'quarantine',
      source: { uri: sourceDir, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { uri: await tempDir('q-t', dirs), key: ['id'], orderBy: 'seq' },
    };
    await fsp.writeFile(file, JSON.stringify({ jobs: [job] }));

    const human = await cli(['run', '--config', file, '--log-level', 'silent']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('orders: succeeded');
    expect(human.stdout).toMatch(
      /quarantined \(1\):\n {4}2025\/04\/01\/broken\.parquet: \[load\] cannot read .*broken\.parquet/,
    );

    const status = await cli(['status', '--config', file]);
    expect(status.stdout).toMatch(
      /quarantined \(1\):\n {4}2025\/04\/01\/broken\.parquet: \[load\] cannot read/,
    );
    const json = JSON.parse((await cli(['status', '--config', file, '--json'])).stdout);
    expect(json).toMatchObject({
      job: 'orders',
      rows: 1,
      quarantined: [
        {
          key: '2025/04/01/broken.parquet',
          error: expect.stringContaining('cannot read'),
          at: expect.any(String),
        },
      ],
    });

    await source.write('2025/04/02/next.csv', 'id,seq\n2,1\n');
    const next = JSON.parse(
      (await cli(['run', '--config', file, '--json', '--log-level', 'silent'])).stdout,
    );
    expect(next).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    expect(next.quarantined).toBeUndefined();
  });
});
