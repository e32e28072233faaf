import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { S3Storage } from '../../src/storage/s3.js';
import { describeUri, openStorage } from '../../src/storage/uri.js';

describe('storage URIs', () => {
  it('opens s3:// (and s3a://) URIs as S3Storage with a normalised prefix', async () => {
    const s = openStorage('s3://landing-bucket/orders/2026', {
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
    });
    expect(s).toBeInstanceOf(S3Storage);
    const s3 = s as S3Storage;
    expect([s3.bucket, s3.prefix, s3.uri]).toEqual([
      'landing-bucket',
      'orders/2026/',
      's3://landing-bucket/orders/2026/',
    ]);
    expect(await s3.client.config.region()).toBe('us-east-1');
    expect(s3.client.config.forcePathStyle).toBe(true);
    expect((openStorage('s3a://b1/x/') as S3Storage).uri).toBe('s3://b1/x/');
    expect((openStorage('s3://b1') as S3Storage).prefix).toBe('');
    s3.client.destroy();
  });

  it('opens file:// URIs with percent-decoding, and plain paths', () => {
    const f = openStorage('file:///tmp/land%20ing/caf%C3%A9') as LocalStorage;
    expect(f).toBeInstanceOf(LocalStorage);
    expect(f.root).toBe('/tmp/land ing/café');
    expect((openStorage('/srv/data/') as LocalStorage).root).toBe('/srv/data');
    expect((openStorage('data/landing') as LocalStorage).root).toBe(path.resolve('data/landing'));
    // A plain path is taken literally: `%20` stays in the folder name.
    expect((openStorage('/tmp/a%20b') as LocalStorage).root).toBe('/tmp/a%20b');
  });

  it('describes URIs canonically without opening them', () => {
    expect(describeUri('s3://b1/p')).toEqual({
      kind: 's3',
      uri: 's3://b1/p/',
      bucket: 'b1',
      prefix: 'p/',
    });
    expect(describeUri('file:///tmp/a%20b')).toEqual({
      kind: 'file',
      uri: 'file:///tmp/a%20b/',
      path: '/tmp/a b',
    });
  });

  it('refuses unsupported or malformed URIs with ConfigError', () => {
    for (const bad of [
      'gs://b/x',
      'http://host/x',
      's3://',
      's3:///x',
      's3://b/../x',
      's3://b/a/./c/',
      'file://remote-host/x',
      'file:relative',
    ]) {
      expect(() => describeUri(bad), bad).toThrow(ConfigError);
    }
  });
});
