/**
 * The published package works on its own: `npm pack` (which builds dist/ through `prepare`), then
 * `npm install <tarball>` into an empty folder (dependencies from the npm registry, or its local
 * cache) and `npx tidemark run` there on a local landing zone: exit 0, one JSON report, a Delta
 * table. Slow (30-60 s): the one test of the packaging.
 */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, tempDir } from '../job/helpers.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

afterAll(async () => {
  await cleanup(dirs);
});

describe('npm package', () => {
  it(
    'npm pack → npm install <tarball> in an empty folder → npx tidemark run creates the table',
    { timeout: 240_000 },
    async () => {
      const packDir = await tempDir('pack', dirs);
      const { stdout: packed } = await run(
        'npm',
        ['pack', '--json', '--pack-destination', packDir, ...NPM_QUIET],
        { cwd: REPO, maxBuffer: 64 << 20 },
      );
      const [info] = JSON.parse(packed) as Array<{
        filename: string;
        files: Array<{ path: string }>;
      }>;
      const files = info!.files.map((f) => f.path);
      expect(files).toEqual(
        expect.arrayContaining([
          'bin/tidemark.js',
          'dist/cli/bin.js',
          'dist/cli/main.js',
          'LICENSE',
          'README.md',
          'package.json',
        ]),
      );
      expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false);

      const app = await tempDir('pack-app', dirs);
      await fsp.writeFile(
        path.join(app, 'package.json'),
        JSON.stringify({ name: 'pack-app', private: true }),
      );
      await run(
        'npm',
        [
          'install',
          path.join(packDir, path.basename(info!.filename)),
          '--prefer-offline',
          ...NPM_QUIET,
        ],
        { cwd: app, maxBuffer: 64 << 20 },
      );

      await fsp.mkdir(path.join(app, 'landing', '2025', '01', '02'), { recursive: true });
      await fsp.writeFile(
        path.join(app, 'landing', '2025', '01', '02', 'a.csv'),
        'id,name,seq\n1,one,1\n2,two,1\n',
      );
      const job = {
        name: 'demo',
        source: { uri: 'landing', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: { uri: 'table', key: ['id'], orderBy: 'seq' },
      };
      await fsp.writeFile(path.join(app, 'tidemark.yaml'), JSON.stringify({ jobs: [job] }));
      const env = { ...process.env, npm_package_version: '' };
      const { stdout } = await run('npx', ['--no', '--', 'tidemark', 'run', '--json'], {
        cwd: app,
        env,
      });
      expect(JSON.parse(stdout)).toMatchObject({
        job: 'demo',
        status: 'succeeded',
        filesLoaded: 1,
        inserted: 2,
        tableVersion: 0,
      });
      expect(await fsp.readdir(path.join(app, 'table', '_delta_log'))).toContain(
        '00000000000000000000.json',
      );

      const own = (
        JSON.parse(await fsp.readFile(path.join(REPO, 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;
      const { stdout: version } = await run('npx', ['--no', '--', 'tidemark', '--version'], {
        cwd: app,
        env,
      });
      expect(version.trim()).toBe(own);
    },
  );
});
