/**
 * loadConfig with real files: paths relative to the config file's folder, and the messages
 * for a missing, empty or wrongly shaped file.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, resolveUri } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tm-config-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const JOBS = `
jobs:
  - name: orders
    source: { uri: ./landing, discover: { by: modified } }
    target: { uri: ../lake/orders, mode: append }
  - name: remote
    source: { uri: s3://landing/orders/, discover: { by: modified } }
    target: { uri: "file:warehouse/remote", mode: append }
  - name: absolute
    source: { uri: /data/landing, discover: { by: modified } }
    target: { uri: "file:///data/lake/t", mode: append }
`;

async function configAt(rel: string, text: string): Promise<string> {
  const file = join(root, rel);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(file, text);
  return file;
}

async function errorOf(p: Promise<unknown>): Promise<ConfigError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('relative paths', () => {
  it("resolve against the config file's folder, not the current one (-c other/dir/tidemark.yaml)", async () => {
    const file = await configAt('other/dir/tidemark.yaml', JOBS);
    // As given on the command line: relative to the working folder, which is not the config's.
    const cfg = await loadConfig(relative(process.cwd(), file));
    const [orders, remote, absolute] = cfg.jobs;
    expect(orders!.source.uri).toBe(join(root, 'other/dir/landing'));
    expect(orders!.target.uri).toBe(join(root, 'other/lake/orders'));
    expect(remote!.source.uri).toBe('s3://landing/orders/');
    expect(remote!.target.uri).toBe(pathToFileURL(join(root, 'other/dir/warehouse/remote')).href);
    expect(absolute!.source.uri).toBe('/data/landing');
    expect(absolute!.target.uri).toBe('file:///data/lake/t');
  });

  it('a relative -c path works from another working folder', async () => {
    await configAt('cwd-test/conf/tidemark.yaml', JOBS);
    const before = process.cwd();
    process.chdir(join(root, 'cwd-test'));
    try {
      const cfg = await loadConfig('conf/tidemark.yaml');
      expect(cfg.jobs[0]!.source.uri).toBe(join(root, 'cwd-test/conf/landing'));
    } finally {
      process.chdir(before);
    }
  });

  it('interpolation happens first: ${VAR:-./landing} is relative to the config file', async () => {
    const file = await configAt(
      'interp/tidemark.yaml',
      `
jobs:
  - name: a
    source: { uri: "\${TM_TEST_UNSET_LANDING:-./landing}", discover: { by: modified } }
    target: { uri: "\${TM_TEST_UNSET_LAKE:-s3://lake/a}", mode: append }
`,
    );
    const cfg = await loadConfig(file);
    expect(cfg.jobs[0]!.source.uri).toBe(join(root, 'interp/landing'));
    expect(cfg.jobs[0]!.target.uri).toBe('s3://lake/a');
  });

  it('parseConfig leaves paths alone without a baseDir', () => {
    expect(parseConfig(JOBS).jobs[0]!.source.uri).toBe('./landing');
    expect(parseConfig(JOBS, 'x', { baseDir: '/cfg' }).jobs[0]!.source.uri).toBe('/cfg/landing');
  });

  it('resolveUri: plain and file: relative forms resolve; URIs, absolute paths and malformed URIs do not', () => {
    expect(resolveUri('landing', '/cfg')).toBe('/cfg/landing');
    expect(resolveUri('./a/../b/', '/cfg')).toBe('/cfg/b');
    expect(resolveUri('file:./a%20b/', '/cfg')).toBe('file:///cfg/a%20b/');
    expect(resolveUri('file:../up', '/cfg/x')).toBe('file:///cfg/up');
    expect(resolveUri('s3://bucket/p/', '/cfg')).toBe('s3://bucket/p/');
    expect(resolveUri('s3a://bucket/p/', '/cfg')).toBe('s3a://bucket/p/');
    expect(resolveUri('file:///abs', '/cfg')).toBe('file:///abs');
    expect(resolveUri('/abs', '/cfg')).toBe('/abs');
    expect(resolveUri('s3:bucket/p', '/cfg')).toBe('s3:bucket/p');
  });
});

describe('loadConfig messages', () => {
  it('a missing file names the absolute path tried and suggests -c', async () => {
    const before = process.cwd();
    process.chdir(root);
    try {
      const err = await errorOf(loadConfig());
      expect(err.message).toBe(
        `cannot read config file ${join(root, 'tidemark.yaml')}: no such file; pass the config file with -c FILE (--config FILE)`,
      );
      expect(err.context.key).toBe(join(root, 'tidemark.yaml'));
      expect(err.kind).toBe('usage');
    } finally {
      process.chdir(before);
    }
  });

  it('a folder is not a config file', async () => {
    await mkdir(join(root, 'a-folder'), { recursive: true });
    const err = await errorOf(loadConfig(join(root, 'a-folder')));
    expect(err.message).toMatch(/a-folder: it is a folder; pass the config file with -c FILE/);
  });

  it.each([
    ['an empty file', ''],
    ['only whitespace', '\n\n  \n'],
    ['only comments', '# yaml-language-server: $schema=./tidemark.schema.json\n# todo\n'],
    ['an empty document', '---\n'],
  ])('%s says it is empty and needs a jobs: list', async (_, text) => {
    const file = await configAt(`empty-${text.length}.yaml`, text);
    const err = await errorOf(loadConfig(file));
    expect(err.message).toBe(
      `invalid ${file}: the config file is empty; it needs a \`jobs:\` list`,
    );
    expect(err.context.field).toBe('(root)');
  });

  it.each([
    ['a list', '- name: orders\n- name: clicks\n', 'got a list'],
    ['a string', 'tidemark\n', 'got the text "tidemark"'],
    ['a number', '42\n', 'got the number 42'],
    ['a boolean', 'true\n', 'got the boolean true'],
  ])('a file that is %s says a mapping with jobs: was expected', async (_, text, got) => {
    const file = await configAt(`shape-${got.length}.yaml`, text);
    const err = await errorOf(loadConfig(file));
    expect(err.message).toBe(
      `invalid ${file}: expected a mapping with a \`jobs:\` list (and optionally \`storage:\`), ${got}`,
    );
  });
});
