/** `discover: { by: notifications }` in the config: defaults, and every bad field named (pure). */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { resolveDiscovery, sqsQueueUrlProblem } from '../../../src/discovery/config.js';
import { discoveryConfigOf } from '../../../src/job/open.js';
import { ConfigError } from '../../../src/errors.js';
import { queueRegion } from '../../../src/storage/sqs.js';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/landing-events';

function config(discover: string): string {
  return `
jobs:
  - name: events
    source:
      uri: s3://landing/events/
      discover: ${discover}
    target:
      uri: ./warehouse/events
      mode: append
`;
}

function problemsOf(text: string): string[] {
  try {
    parseConfig(text, 'test.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).context['problems'] as string[];
  }
  throw new Error('expected a ConfigError');
}

describe('discover.by: notifications', () => {
  it('fills the defaults: a reconciling listing a day, messages hidden 5 minutes', () => {
    const job = parseConfig(config(`{ by: notifications, queue: "${QUEUE}" }`)).jobs[0]!;
    expect(job.source.discover).toEqual({
      by: 'notifications',
      queue: QUEUE,
      reconcileEvery: 86_400_000,
      visibilityTimeout: 300_000,
      onOverwrite: 'reload',
    });
    const settings = resolveDiscovery(discoveryConfigOf(job));
    expect(settings).toMatchObject({
      mode: 'notifications',
      queueUrl: QUEUE,
      region: null,
      reconcileEveryMs: 86_400_000,
      visibilityTimeoutS: 300,
      start: null,
      onOverwrite: 'reload',
    });
  });

  it('takes durations, a region, a start and include/exclude', () => {
    const job = parseConfig(
      config(
        `{ by: notifications, queue: "${QUEUE}", reconcileEvery: 6h, visibilityTimeout: 1500ms, region: eu-west-1, start: 2026-11-01, onOverwrite: ignore }\n      include: ["*.csv"]`,
      ),
    ).jobs[0]!;
    const settings = resolveDiscovery(discoveryConfigOf(job));
    expect(settings).toMatchObject({
      reconcileEveryMs: 6 * 3_600_000,
      visibilityTimeoutS: 2,
      region: 'eu-west-1',
      start: Date.parse('2026-11-01T00:00:00Z'),
      onOverwrite: 'ignore',
    });
    expect(settings.selects('a/b.csv')).toBe(true);
    expect(settings.selects('a/b.json')).toBe(false);
  });

  it('names every bad field at once', () => {
    const problems = problemsOf(
      config(
        `{ by: notifications, queue: "arn:aws:sqs:eu-west-1:123456789012:q", reconcileEvery: 0s, visibilityTimeout: 13h, region: Europe, start: yesterday, settle: 15m }`,
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/discover.*settle/),
        expect.stringMatching(/discover\.queue.*is an ARN; give the queue URL/),
        expect.stringMatching(/discover\.reconcileEvery.*must be a duration > 0/),
        expect.stringMatching(/discover\.visibilityTimeout.*between 1s and 12h/),
        expect.stringMatching(/discover\.region.*"Europe" is not an AWS region name/),
        expect.stringMatching(/discover\.start.*"yesterday" is not a timestamp/),
      ]),
    );
    expect(problemsOf(config('{ by: notifications }'))).toEqual([
      expect.stringMatching(/discover\.queue/),
    ]);
  });

  it('takes only queue URLs', () => {
    expect(sqsQueueUrlProblem(QUEUE)).toBeNull();
    expect(sqsQueueUrlProblem('http://127.0.0.1:5000/123456789012/q.fifo')).toBeNull();
    expect(sqsQueueUrlProblem('landing-events')).toMatch(/is not a URL/);
    expect(sqsQueueUrlProblem('ftp://sqs.eu-west-1.amazonaws.com/1/q')).toMatch(
      /not an http\(s\) URL/,
    );
    expect(sqsQueueUrlProblem('https://sqs.eu-west-1.amazonaws.com/landing-events')).toMatch(
      /does not end in \/<account>\/<queue name>/,
    );
    expect(sqsQueueUrlProblem('https://key:secret@sqs.eu-west-1.amazonaws.com/1/q')).toMatch(
      /must not carry credentials/,
    );
    expect(sqsQueueUrlProblem(`${QUEUE}?Action=ReceiveMessage`)).toMatch(/has a query or fragment/);
  });

  it('finds the region in AWS queue URLs, and none elsewhere', () => {
    expect(queueRegion(QUEUE)).toBe('eu-west-1');
    expect(queueRegion('https://eu-central-1.queue.amazonaws.com/1/q')).toBe('eu-central-1');
    expect(queueRegion('https://queue.amazonaws.com/1/q')).toBe('us-east-1');
    expect(queueRegion('https://sqs.cn-north-1.amazonaws.com.cn/1/q')).toBe('cn-north-1');
    expect(queueRegion('http://127.0.0.1:5000/123456789012/q')).toBeNull();
  });
});

describe('discover.by: notifications on a local source', () => {
  it('is refused: S3 sends the events', () => {
    const text = config(`{ by: notifications, queue: "${QUEUE}" }`).replace(
      's3://landing/events/',
      './landing',
    );
    expect(problemsOf(text)).toEqual([
      expect.stringMatching(/discover\.by.*notifications need an s3:\/\/ source/),
    ]);
  });
});
