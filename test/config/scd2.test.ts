import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { scd2Columns } from '../../src/config/schema.js';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { ConfigError } from '../../src/errors.js';

const job = (target: string) => `
jobs:
  - name: a
    source: { uri: ./s, discover: { by: modified } }
    target: { uri: ./t, ${target} }
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

describe('config: target.mode scd2', () => {
  it('takes key, orderBy and the defaults of the history columns', () => {
    const t = parseConfig(job('mode: scd2, key: [id], orderBy: updated_at')).jobs[0]!.target;
    expect(t.mode).toBe('scd2');
    expect(scd2Columns(t)).toEqual({
      validFrom: 'valid_from',
      validTo: 'valid_to',
      isCurrent: 'is_current',
    });
    expect(t.trackColumns).toBeUndefined();
  });

  it('takes configured history columns and tracked columns as a list or { except }', () => {
    const listed = parseConfig(
      job(
        'mode: scd2, key: [id], orderBy: ts, validFrom: from_ts, validTo: to_ts, isCurrent: current, trackColumns: [status, price]',
      ),
    ).jobs[0]!.target;
    expect(scd2Columns(listed)).toEqual({
      validFrom: 'from_ts',
      validTo: 'to_ts',
      isCurrent: 'current',
    });
    expect(listed.trackColumns).toEqual(['status', 'price']);
    const except = parseConfig(
      job('mode: scd2, key: [id], orderBy: ts, trackColumns: { except: [last_seen] }'),
    ).jobs[0]!.target;
    expect(except.trackColumns).toEqual({ except: ['last_seen'] });
  });

  it('requires key and orderBy, naming the fields', () => {
    expect(problemsOf(job('mode: scd2'))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^jobs\[0\]\.target\.key: is required when mode is scd2/),
        expect.stringMatching(/^jobs\[0\]\.target\.orderBy: is required when mode is scd2/),
      ]),
    );
  });

  it('refuses history columns that clash with the key, the orderBy, lineage or each other', () => {
    const problems = problemsOf(
      job(
        'mode: scd2, key: [id], orderBy: ts, validFrom: ID, validTo: ts, isCurrent: _source_file',
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^jobs\[0\]\.target\.validFrom: names "ID", which is a key column/),
        expect.stringMatching(/^jobs\[0\]\.target\.validTo: names "ts", which is the orderBy/),
        expect.stringMatching(
          /^jobs\[0\]\.target\.isCurrent: names "_source_file", which is a lineage/,
        ),
      ]),
    );
    expect(problemsOf(job('mode: scd2, key: [id], orderBy: ts, validTo: valid_from'))).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.target\.validTo: names "valid_from", which is target\.validFrom/,
      ),
    ]);
  });

  it('refuses tracked columns that are the key, the orderBy or a history column', () => {
    expect(
      problemsOf(job('mode: scd2, key: [id], orderBy: ts, trackColumns: [status, id]')),
    ).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.target\.trackColumns\[1\]: names "id", which is a key column/,
      ),
    ]);
    expect(
      problemsOf(job('mode: scd2, key: [id], orderBy: ts, trackColumns: { except: [is_current] }')),
    ).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.target\.trackColumns\.except\[0\]: names "is_current", which is target\.isCurrent/,
      ),
    ]);
    expect(problemsOf(job('mode: scd2, key: [id], orderBy: ts, trackColumns: []'))).toEqual([
      expect.stringMatching(/^jobs\[0\]\.target\.trackColumns: /),
    ]);
  });

  it('refuses the scd2 fields in other modes, and a change data feed in scd2 mode', () => {
    expect(problemsOf(job('mode: merge, key: [id], orderBy: ts, validFrom: f'))).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.target\.validFrom: applies only when mode is scd2 \(it is merge\)/,
      ),
    ]);
    expect(problemsOf(job('mode: append, trackColumns: [a]'))).toEqual([
      expect.stringMatching(/^jobs\[0\]\.target\.trackColumns: applies only when mode is scd2/),
    ]);
    expect(problemsOf(job('mode: scd2, key: [id], orderBy: ts, changeDataFeed: true'))).toEqual([
      expect.stringMatching(/^jobs\[0\]\.target\.changeDataFeed: is not supported in scd2 mode/),
    ]);
  });

  it('takes a snapshot source with snapshotAsOf; refuses one without it, and snapshotAsOf elsewhere', () => {
    const snap = (source: string, target = 'mode: scd2, key: [id], orderBy: ts') => `
jobs:
  - name: a
    source: { uri: ./s, discover: { by: modified }, ${source} }
    target: { uri: ./t, ${target} }
`;
    const ok = parseConfig(snap('snapshot: true, snapshotAsOf: taken_at')).jobs[0]!;
    expect(ok.source).toMatchObject({ snapshot: true, snapshotAsOf: 'taken_at' });
    // Refused at load (a ConfigError: exit 2), naming the field.
    let err: unknown;
    try {
      parseConfig(snap('snapshot: true'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(exitCodeFor(err)).toBe(2);
    expect(problemsOf(snap('snapshot: true'))).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.source\.snapshotAsOf: is required with source\.snapshot in scd2 mode/,
      ),
    ]);
    expect(problemsOf(snap('snapshotAsOf: taken_at'))).toEqual([
      expect.stringMatching(/^jobs\[0\]\.source\.snapshotAsOf: applies only with snapshot: true/),
    ]);
    expect(
      problemsOf(
        snap('snapshot: true, snapshotAsOf: taken_at', 'mode: merge, key: [id], orderBy: ts'),
      ),
    ).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.source\.snapshotAsOf: applies only when target\.mode is scd2 \(it is merge\)/,
      ),
    ]);
    expect(problemsOf(snap('snapshot: true, snapshotAsOf: ts'))).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.source\.snapshotAsOf: names "ts", a key or orderBy column/,
      ),
    ]);
    expect(problemsOf(snap('snapshot: true', 'mode: append'))).toEqual([
      expect.stringMatching(
        /^jobs\[0\]\.source\.snapshot: applies only when target\.mode is merge or scd2 \(it is append\)/,
      ),
    ]);
  });
});
