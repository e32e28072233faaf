/**
 * `target.tableProperties`: Delta table properties of a table the job creates. YAML booleans and
 * numbers become the strings Delta stores; a `delta.` property must be one tidemark honours, with
 * a value of the right form; other properties pass as they are.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';

const job = (props: string) => `
jobs:
  - name: orders
    source: { uri: /landing, discover: { by: modified } }
    target:
      uri: /lake/orders
      key: [id]
      orderBy: seq
      tableProperties: ${props}
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

describe('target.tableProperties', () => {
  it('takes the features tidemark honours, as Delta strings, and any property outside delta.', () => {
    const config = parseConfig(
      job(
        `{ delta.enableRowTracking: true, delta.enableInCommitTimestamps: "true", delta.checkpointPolicy: v2, delta.checkpointInterval: 20, delta.appendOnly: false, owner.team: data }`,
      ),
    );
    expect(config.jobs[0]!.target.tableProperties).toEqual({
      'delta.enableRowTracking': 'true',
      'delta.enableInCommitTimestamps': 'true',
      'delta.checkpointPolicy': 'v2',
      'delta.checkpointInterval': '20',
      'delta.appendOnly': 'false',
      'owner.team': 'data',
    });
    expect(parseConfig(job('{}')).jobs[0]!.target.tableProperties).toEqual({});
  });

  it('names the field of each unknown delta. property and each value of the wrong form', () => {
    const problems = problemsOf(
      job(
        `{ delta.enableRowTraking: true, delta.enableInCommitTimestamps: yes, delta.checkpointPolicy: v3, delta.checkpointInterval: 0 }`,
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /jobs\[0\]\.target\.tableProperties\.delta\.enableRowTraking.*is not a Delta table property tidemark sets/,
        ),
        expect.stringMatching(
          /tableProperties\.delta\.enableInCommitTimestamps.*must be true or false, got "yes"/,
        ),
        expect.stringMatching(
          /tableProperties\.delta\.checkpointPolicy.*must be one of classic, v2, got "v3"/,
        ),
        expect.stringMatching(
          /tableProperties\.delta\.checkpointInterval.*must be a positive integer, got 0/,
        ),
      ]),
    );
    expect(problems).toHaveLength(4);
  });
});
