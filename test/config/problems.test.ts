/**
 * Every problem of a config at once, each naming its field, with "did you mean" for misspelt
 * fields and values.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { closest, editDistance } from '../../src/config/suggest.js';
import { ConfigError } from '../../src/errors.js';

function errorOf(text: string): ConfigError {
  try {
    parseConfig(text, 'test.yaml', { env: {} });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}
const problemsOf = (text: string) => errorOf(text).context['problems'] as string[];

describe('did you mean', () => {
  it('suggests the field meant by a typo, a swapped pair of letters or a wrong case', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, fromat: csv, discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", lookbak: 2 } }
    target: { uri: ./t, key: [id], orderBy: ts }
    tagret: { uri: ./t }
    maxfilesperbatch: 10
  - name: b
    source: { uri: ./s, discover: { by: modified, settel: 5m } }
    target: { uri: ./t, key: [id], orderby: ts }
storge: { region: eu-west-1 }
`);
    expect(problems).toEqual(
      expect.arrayContaining([
        'jobs[0].tagret: unknown field; did you mean target?',
        'jobs[0].maxfilesperbatch: unknown field; did you mean maxFilesPerBatch?',
        'jobs[0].source.fromat: unknown field; did you mean format?',
        'jobs[0].source.discover.lookbak: unknown field; did you mean lookback?',
        // The modified variant's fields, not the partition variant's.
        'jobs[1].source.discover.settel: unknown field; did you mean settle?',
        'jobs[1].target.orderby: unknown field; did you mean orderBy?',
        'storge: unknown field; did you mean storage?',
      ]),
    );
  });

  it('says only "unknown field" when nothing is close', () => {
    const problems = problemsOf(`
jobs:
  - { name: a, source: { uri: ./s, discover: { by: modified } }, target: { uri: ./t, mode: append }, colour: red }
`);
    expect(problems).toEqual(['jobs[0].colour: unknown field']);
  });

  it('suggests a value for a misspelt enum or discriminator', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, format: parqet, discover: { by: partiton, layout: "{yyyy}/{mm}/{dd}" } }
    target: { uri: ./t, mode: apend }
    onBadFile: Quarantine
`);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^jobs\[0\]\.source\.format: .*; did you mean parquet\?$/),
        expect.stringMatching(/^jobs\[0\]\.source\.discover\.by: .*; did you mean partition\?$/),
        expect.stringMatching(/^jobs\[0\]\.target\.mode: .*; did you mean append\?$/),
        expect.stringMatching(/^jobs\[0\]\.onBadFile: .*; did you mean quarantine\?$/),
      ]),
    );
  });

  it('singleWriter under source.storage says where it belongs', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, storage: { singleWriter: true }, discover: { by: modified } }
    target: { uri: ./t, mode: append }
`);
    expect(problems).toEqual([
      'jobs[0].source.storage.singleWriter: unknown field (singleWriter belongs to storage or target.storage: a source is only read)',
    ]);
  });

  it('a field left out is required, naming it (beside the misspelt one that was meant)', () => {
    expect(
      problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, discover: { by: modified } }
    tagret: { uri: ./t, mode: append }
metrics: { fille: m.prom }
`),
    ).toEqual(
      expect.arrayContaining([
        'jobs[0].target: is required',
        'jobs[0].tagret: unknown field; did you mean target?',
        'metrics.file: is required',
      ]),
    );
    expect(problemsOf('job: []\n')).toEqual([
      'jobs: is required',
      'job: unknown field; did you mean jobs?',
    ]);
  });

  it('edit distance counts a swap of neighbours as one edit', () => {
    expect(editDistance('tagret', 'target')).toBe(1);
    expect(editDistance('layuot', 'layout')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(closest('orderby', ['orderBy', 'order'])).toBe('orderBy');
    expect(closest('xyz', ['key', 'uri'])).toBeNull();
    expect(closest('ur', ['uri', 'key'])).toBe('uri');
  });
});

describe('every problem at once', () => {
  it('reports five different mistakes in one error, each naming its field', () => {
    const err = errorOf(`
storage: { endpoint: not-a-url }
jobs:
  - name: orders
    source:
      uri: "\${LANDING}"
      discover: { by: partition, layout: "{yyyy}/{mm}" }
      include: ["/2026/*.csv"]
    target: { uri: ./t, mode: merge, orderBy: updated_at }
    maxBytesPerBatch: lots
    tagret: { uri: ./x }
`);
    const problems = err.context['problems'] as string[];
    expect(problems).toHaveLength(7);
    expect(problems).toEqual(
      expect.arrayContaining([
        'jobs[0].source.uri: environment variable LANDING is not set (write ${LANDING:-default} to give a default)',
        expect.stringMatching(/^storage\.endpoint: /),
        'jobs[0].source.discover.layout: invalid layout "{yyyy}/{mm}": it must name at least {yyyy}, {mm} and {dd}',
        'jobs[0].source.include[0]: "/2026/*.csv" never matches: patterns are relative to source.uri, without a leading / or ./',
        'jobs[0].target.key: is required when mode is merge',
        'jobs[0].maxBytesPerBatch: expected a size such as 64MiB or 1GiB, got "lots"',
        'jobs[0].tagret: unknown field; did you mean target?',
      ]),
    );
    expect(err.message.split('\n')[0]).toBe('invalid test.yaml (7 problems):');
    for (const p of problems) expect(err.message).toContain(p);
    expect(err.context.field).toBe('jobs[0].source.uri');
  });

  it('checks discovery settings that only discovery understands: time zone, start', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", timezone: Mars/Olympus } }
    target: { uri: ./t, mode: append }
  - name: b
    source: { uri: ./s, discover: { by: modified, start: yesterday } }
    target: { uri: ./t, mode: append }
`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.source\.discover\.timezone: unknown time zone "Mars\/Olympus"/,
      ),
      expect.stringMatching(
        /^jobs\[1\]\.source\.discover\.start: start "yesterday" is not a timestamp/,
      ),
    ]);
  });

  it('reports every problem of a discover block at once: an invalid layout does not hide an invalid time zone', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, discover: { by: partition, layout: "{yyyy}/{mm}", timezone: Mars/Olympus, lookback: 2 } }
    target: { uri: ./t, mode: append }
`);
    expect(problems).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.source\.discover\.layout: invalid layout "\{yyyy\}\/\{mm\}"/,
      ),
      expect.stringMatching(
        /^jobs\[0\]\.source\.discover\.timezone: unknown time zone "Mars\/Olympus"/,
      ),
    ]);
  });

  it('checks the CSV dialect: one-character quote and escape, quote not in the delimiter', () => {
    const problems = problemsOf(`
jobs:
  - name: a
    source: { uri: ./s, csv: { delimiter: ";", quote: ";", escape: "\\\\\\\\" }, discover: { by: modified } }
    target: { uri: ./t, mode: append }
`);
    expect(problems).toEqual(
      expect.arrayContaining([
        'jobs[0].source.csv.quote: must differ from the delimiter',
        expect.stringMatching(/^jobs\[0\]\.source\.csv\.escape: must be one character/),
      ]),
    );
  });
});
