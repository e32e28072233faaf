/**
 * Storage settings per source and target, merged field by field over the top-level `storage`,
 * and what `openSource` / `openTarget` hand to the storage driver.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { sourceStorageConfig, targetStorageConfig } from '../../src/config/storage.js';
import { openSource, openTarget } from '../../src/job/open.js';
import type { Storage } from '../../src/storage/storage.js';
import type { S3EndpointOptions } from '../../src/storage/uri.js';

const cfg = parseConfig(`
storage: { endpoint: "http://127.0.0.1:9000", region: us-east-1, forcePathStyle: true }
jobs:
  - name: split
    source:
      uri: s3://landing/orders/
      storage: { endpoint: "http://minio.landing:9000" }
      discover: { by: modified }
    target:
      uri: s3://lake/orders
      mode: append
      storage: { region: eu-west-1, forcePathStyle: false, singleWriter: true }
  - name: plain
    source: { uri: s3://landing/clicks/, discover: { by: modified } }
    target: { uri: s3://lake/clicks, mode: append }
`);
const [split, plain] = cfg.jobs;

describe('storage per source and target', () => {
  it('merges source.storage and target.storage over the global settings, field by field', () => {
    expect(sourceStorageConfig(cfg, split!)).toEqual({
      endpoint: 'http://minio.landing:9000',
      region: 'us-east-1',
      forcePathStyle: true,
      singleWriter: false,
    });
    expect(targetStorageConfig(cfg, split!)).toEqual({
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      forcePathStyle: false,
      singleWriter: true,
    });
  });

  it('a job without its own settings gets the global ones; the helpers accept config.storage too', () => {
    expect(targetStorageConfig(cfg.storage, plain!)).toEqual(cfg.storage);
    expect(sourceStorageConfig(cfg.storage, plain!)).toEqual(cfg.storage);
    expect(targetStorageConfig(cfg, plain!).singleWriter).toBe(false);
  });

  it('openSource and openTarget open each side with its merged S3 options', () => {
    const opened: Array<[string, S3EndpointOptions]> = [];
    const open = (uri: string, options: S3EndpointOptions) => {
      opened.push([uri, options]);
      return {} as Storage;
    };
    openSource(split!, cfg.storage, open);
    openTarget(split!, cfg.storage, open);
    openTarget(plain!, cfg.storage, open);
    expect(opened).toEqual([
      [
        's3://landing/orders/',
        { endpoint: 'http://minio.landing:9000', region: 'us-east-1', forcePathStyle: true },
      ],
      [
        's3://lake/orders',
        { endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', forcePathStyle: false },
      ],
      [
        's3://lake/clicks',
        { endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', forcePathStyle: true },
      ],
    ]);
  });

  it('uploadChecksum and etagChecksum reach the driver per side; an unknown checksum is refused naming the field', () => {
    const checked = parseConfig(`
storage: { uploadChecksum: MD5 }
jobs:
  - name: gateway
    source: { uri: s3://landing/x/, storage: { etagChecksum: false }, discover: { by: modified } }
    target: { uri: s3://lake/x, mode: append, storage: { uploadChecksum: 'off' } }
`);
    const opened: S3EndpointOptions[] = [];
    const open = (_uri: string, options: S3EndpointOptions) => {
      opened.push(options);
      return {} as Storage;
    };
    openSource(checked.jobs[0]!, checked.storage, open);
    openTarget(checked.jobs[0]!, checked.storage, open);
    expect(opened).toEqual([
      { uploadChecksum: 'MD5', etagChecksum: false },
      { uploadChecksum: 'off' },
    ]);
    expect(() => parseConfig('storage: { uploadChecksum: crc64 }\njobs: []')).toThrow(
      /storage\.uploadChecksum/,
    );
  });
});
