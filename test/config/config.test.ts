import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { parseDuration, parseSize } from '../../src/config/units.js';

const README_EXAMPLE = `
storage:
  endpoint: http://127.0.0.1:9000
  region: us-east-1
  forcePathStyle: true
jobs:
  - name: orders
    source:
      uri: s3://landing/orders/
      format: parquet
      discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", lookback: 2 }
    target:
      uri: s3://lake/dw/orders
      mode: merge
      key: [order_id]
      orderBy: updated_at
      partitionBy: [order_date]
      deleteWhen: is_deleted
  - name: clicks
    source:
      uri: s3://landing/clicks/
      format: json
      discover: { by: modified, settle: 15m }
    target:
      uri: ./warehouse/clicks
      mode: append
    maxFilesPerBatch: 1000
    maxBytesPerBatch: 1GiB
`;

function problemsOf(text: string): string[] {
  try {
    parseConfig(text, 'test.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).context['problems'] as string[];
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('accepts the README example and fills defaults', () => {
    const cfg = parseConfig(README_EXAMPLE);
    const [orders, clicks] = cfg.jobs;
    expect(orders!.source.discover).toMatchObject({
      by: 'partition',
      lookback: 2,
      timezone: 'UTC',
      onOverwrite: 'reload',
    });
    expect(orders!.maxBytesPerBatch).toBe(1024 ** 3);
    expect(orders!.concurrency).toBe(16);
    expect(orders!.target.tombstoneRetention).toBe(7 * 86_400_000);
    expect(clicks!.source.discover).toMatchObject({ by: 'modified', settle: 15 * 60_000 });
    expect(clicks!.target.mode).toBe('append');
    expect(cfg.storage.singleWriter).toBe(false);
  });

  it('names every bad field at once', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: s3://x/, discover: { by: partition } }
    target: { uri: ./t, mode: merge }
    maxBytesPerBatch: lots
`);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^jobs\[0\]\.source\.discover\.layout: /),
        expect.stringMatching(/^jobs\[0\]\.target\.key: is required when mode is merge/),
        expect.stringMatching(/^jobs\[0\]\.target\.orderBy: is required when mode is merge/),
        expect.stringMatching(/^jobs\[0\]\.maxBytesPerBatch: expected a size/),
      ]),
    );
  });

  // Found by the config-change hunt: accepted, and a row it matched was appended (exit 0, no word).
  it('refuses deleteWhen in append mode, where it would delete nothing', () => {
    const problems = problemsOf(`
jobs:
  - { name: a, source: { uri: ./s, discover: { by: modified } }, target: { uri: ./t, mode: append, deleteWhen: is_deleted } }
`);
    expect(problems).toEqual([
      'jobs[0].target.deleteWhen: does not apply when mode is append (rows are appended, never deleted by key): remove it, or use mode merge',
    ]);
  });

  it('rejects duplicate job names and unknown fields', () => {
    const problems = problemsOf(`
jobs:
  - { name: a, source: { uri: ./s, discover: { by: modified } }, target: { uri: ./t, mode: append }, colour: red }
  - { name: a, source: { uri: ./s, discover: { by: modified } }, target: { uri: ./t, mode: append } }
`);
    expect(problems).toContain('jobs[0].colour: unknown field');
    expect(problems.some((p) => p.startsWith('jobs[1].name: duplicates jobs[0].name'))).toBe(true);
  });

  it('refuses credentials in the file without echoing them', () => {
    let message = '';
    try {
      parseConfig(`
storage: { secretAccessKey: "wJalrXUtnFEMI/K7MDENG" }
jobs:
  - { name: a, source: { uri: ./s, discover: { by: modified } }, target: { uri: ./t, mode: append } }
`);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/storage\.secretAccessKey: credentials are not allowed/);
    expect(message).not.toContain('wJalrXUtnFEMI');
  });

  it('reports YAML syntax errors', () => {
    expect(() => parseConfig('jobs: [ {name: a', 'broken.yaml')).toThrow(
      /invalid YAML in broken.yaml/,
    );
  });

  it('parses durations and sizes', () => {
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('7 weeks')).toBeNull();
    expect(parseSize('64MiB')).toBe(64 * 1024 * 1024);
    expect(parseSize('1GiB')).toBe(1024 ** 3);
    expect(parseSize('12')).toBe(12);
    expect(parseSize('big')).toBeNull();
  });
});
