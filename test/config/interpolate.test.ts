import { describe, expect, it } from 'vitest';
import { expandString, interpolate } from '../../src/config/interpolate.js';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';

const env = { LANDING: 's3://landing/orders/', EMPTY: '', KEY: 'order_id', N: '3' };

function problemsOf(text: string, vars: Record<string, string> = env): string[] {
  try {
    parseConfig(text, 'test.yaml', { env: vars });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).context['problems'] as string[];
  }
  throw new Error('expected a ConfigError');
}

const JOB = (source: string, extra = '') => `
jobs:
  - name: a
    source: { uri: ${source}, discover: { by: modified } }
    target: { uri: ./t, mode: append }
${extra}`;

describe('${VAR} interpolation', () => {
  it('replaces a set variable, and takes the default only when it is unset or empty', () => {
    expect(expandString('${LANDING}2026/', env).value).toBe('s3://landing/orders/2026/');
    expect(expandString('${MISSING:-./landing}', env).value).toBe('./landing');
    expect(expandString('${EMPTY:-fallback}', env).value).toBe('fallback');
    expect(expandString('${LANDING:-unused}', env).value).toBe('s3://landing/orders/');
    expect(expandString('${EMPTY}', env)).toEqual({ value: '', problems: [] });
    expect(expandString('a ${MISSING:-} b', env).value).toBe('a  b');
  });

  it('leaves a lone $ alone, and $${ writes a literal ${', () => {
    expect(expandString('price in $ and $5', env)).toEqual({
      value: 'price in $ and $5',
      problems: [],
    });
    expect(expandString('$${LANDING} is ${KEY}', env)).toEqual({
      value: '${LANDING} is order_id',
      problems: [],
    });
  });

  it('never takes a ${ literally: an unset variable or a malformed reference is a problem', () => {
    expect(expandString('${MISSING}', env).problems).toEqual([
      'environment variable MISSING is not set (write ${MISSING:-default} to give a default)',
    ]);
    for (const bad of ['${', '${LANDING', '${ LANDING }', '${1X}', '${A-B}', 'x${}y']) {
      expect(expandString(bad, env).problems, bad).toEqual([
        expect.stringMatching(/is not a variable reference/),
      ]);
    }
  });

  it('expands string scalars at any depth (lists too), never keys, numbers or booleans', () => {
    const out = interpolate(
      { '${KEY}': 1, list: ['${KEY}', 2, true, null, { deep: '${N}' }], n: 7 },
      env,
    );
    expect(out).toEqual({
      value: { '${KEY}': 1, list: ['order_id', 2, true, null, { deep: '3' }], n: 7 },
      problems: [],
    });
  });

  it('applies to the config: source URI, key lists, nested discover settings', () => {
    const cfg = parseConfig(
      `
jobs:
  - name: a
    source: { uri: "\${LANDING}", discover: { by: partition, layout: "\${LAYOUT:-{yyyy}/{mm}/{dd}}", timezone: "\${TZ_X:-UTC}" } }
    target: { uri: ./t, key: ["\${KEY}"], orderBy: "\${ORDER:-updated_at}" }
`,
      'test.yaml',
      { env },
    );
    const job = cfg.jobs[0]!;
    expect(job.source.uri).toBe('s3://landing/orders/');
    expect(job.source.discover).toMatchObject({
      by: 'partition',
      layout: '{yyyy}/{mm}/{dd}',
      timezone: 'UTC',
    });
    expect(job.target.key).toEqual(['order_id']);
    expect(job.target.orderBy).toBe('updated_at');
  });

  it('an unset variable without a default names the variable and the field, and nothing else about that field', () => {
    const problems = problemsOf(JOB('"${LANDING_ZONE}"'));
    expect(problems).toEqual([
      'jobs[0].source.uri: environment variable LANDING_ZONE is not set (write ${LANDING_ZONE:-default} to give a default)',
    ]);
  });

  it('a variable in a list item is named by its index', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, discover: { by: modified } }
    target: { uri: ./t, key: [id, "\${SECOND_KEY}"], orderBy: ts }
`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.target\.key\[1\]: environment variable SECOND_KEY is not set/,
      ),
    ]);
  });

  it('reads process.env by default', () => {
    process.env['TIDEMARK_TEST_LANDING'] = '/from/env';
    try {
      expect(parseConfig(JOB('"${TIDEMARK_TEST_LANDING}"')).jobs[0]!.source.uri).toBe('/from/env');
    } finally {
      delete process.env['TIDEMARK_TEST_LANDING'];
    }
  });
});

describe('${VAR:-default} with braces', () => {
  it('a default may hold balanced braces, as layouts do', () => {
    expect(expandString('${LAYOUT:-{yyyy}/{mm}/{dd}}', {}).value).toBe('{yyyy}/{mm}/{dd}');
    expect(
      expandString('${LAYOUT:-{yyyy}/{mm}/{dd}}', { LAYOUT: 'dt={yyyy}-{mm}-{dd}' }).value,
    ).toBe('dt={yyyy}-{mm}-{dd}');
    expect(expandString('${LAYOUT:-{yyyy}', {}).problems).toEqual([
      expect.stringMatching(/is not a variable reference/),
    ]);
  });
});
