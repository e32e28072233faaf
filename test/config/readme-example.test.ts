/**
 * The README's config example is a valid config: the fields it shows exist and mean what
 * it says (interpolation, include, the CSV dialect, storage per target, relative paths).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { targetStorageConfig } from '../../src/config/storage.js';

describe('README config example', () => {
  it('parses, and reads as the README explains', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const example = /A config file \(`tidemark\.yaml`\):\n\n```yaml\n([\s\S]*?)```/.exec(
      readme,
    )?.[1];
    expect(example).toBeDefined();
    const cfg = parseConfig(example!, 'README.md', { baseDir: '/etc/tidemark', env: {} });
    const [orders, clicks] = cfg.jobs;
    expect(orders!.source.uri).toBe('s3://landing/orders/');
    expect(orders!.source.include).toEqual(['*.csv', '*.csv.gz']);
    expect(orders!.source.csv).toEqual({ delimiter: ';' });
    expect(targetStorageConfig(cfg, orders!)).toMatchObject({
      endpoint: 'https://s3.eu-west-1.amazonaws.com',
      region: 'eu-west-1',
      forcePathStyle: false,
    });
    expect(clicks!.target.uri).toBe('/etc/tidemark/warehouse/clicks');
    expect(
      parseConfig(example!, 'README.md', { env: { LANDING: 's3://other' } }).jobs[0]!.source.uri,
    ).toBe('s3://other/orders/');
  });
});
