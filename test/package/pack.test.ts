/**
 * The published package works on its own: `npm pack`, then `npm install <tarball>` into an empty
 * folder (dependencies from the npm registry, or its local cache) and `npx tidemark run` there on a
 * local landing zone: exit 0, one JSON report, a Delta table.
 *
 * The package is packed from a staging folder holding what package.json's `files` lists, with
 * dist/ compiled from src/ by esbuild, file by file (the layout `prepare`'s tsc build writes:
 * tsconfig.build.json maps src/ to dist/, checked below), and `npm pack --ignore-scripts`.
 * `prepare` itself, `tsc -p tsconfig.build.json`, cost 24 s of CPU here (most of it reading the
 * AWS SDK's type declarations) for what `npm test`'s typecheck of src already proves; esbuild
 * compiles the same files in well under a second, and the CLI tests run its output already
 * (test/helpers/cli-bundle.setup.ts). The staging folder also leaves the repo's own dist/ alone.
 */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, tempDir } from '../job/helpers.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

afterAll(async () => {
  await cleanup(dirs);
});

interface PackageJson {
  version: string;
  files: string[];
  scripts: Record<string, string>;
}

/**
 * `stage` made into the package's folder: package.json and what its `files` lists, dist/ compiled
 * from src/ (see the module comment). The build `prepare` runs must be the one whose layout this
 * copies: tsconfig.build.json's src/ to dist/.
 */
async function stagePackage(stage: string): Promise<string> {
  const pkg = JSON.parse(
    await fsp.readFile(path.join(REPO, 'package.json'), 'utf8'),
  ) as PackageJson;
  expect(pkg.scripts['prepare']).toBe('tsc -p tsconfig.build.json');
  const buildConfig = JSON.parse(
    await fsp.readFile(path.join(REPO, 'tsconfig.build.json'), 'utf8'),
  ) as { compilerOptions: { rootDir: string; outDir: string }; include: string[] };
  expect(buildConfig).toMatchObject({
    compilerOptions: { rootDir: 'src', outDir: 'dist' },
    include: ['src'],
  });
  await fsp.copyFile(path.join(REPO, 'package.json'), path.join(stage, 'package.json'));
  for (const entry of pkg.files.filter((f) => f !== 'dist'))
    await fsp.cp(path.join(REPO, entry), path.join(stage, entry), { recursive: true });
  const sources = (await fsp.readdir(path.join(REPO, 'src'), { recursive: true }))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(REPO, 'src', f));
  await build({
    entryPoints: sources,
    outbase: path.join(REPO, 'src'),
    outdir: path.join(stage, 'dist'),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
  return stage;
}

describe('npm package', () => {
  it(
    'npm pack → npm install <tarball> in an empty folder → npx tidemark run creates the table',
    { timeout: 240_000 },
    async () => {
      const packDir = await tempDir('pack', dirs);
      const stage = await stagePackage(await tempDir('pack-stage', dirs));
      const { stdout: packed } = await run(
        'npm',
        ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir, ...NPM_QUIET],
        { cwd: stage, maxBuffer: 64 << 20 },
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
        JSON.parse(await fsp.readFile(path.join(REPO, 'package.json'), 'utf8')) as PackageJson
      ).version;
      const { stdout: version } = await run('npx', ['--no', '--', 'tidemark', '--version'], {
        cwd: app,
        env,
      });
      expect(version.trim()).toBe(own);
    },
  );
});
