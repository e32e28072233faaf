/**
 * Reading SQS message bodies of S3 event notifications (pure): the three envelopes S3 events reach
 * a queue in (direct, SNS, EventBridge), S3's test event, and bodies tidemark cannot read. The
 * bodies are AWS's documented shapes (notification-content-structure, SNS Notification, EventBridge
 * ev-events), written out here.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEventKey, parseBody } from '../../../src/discovery/notifications/envelope.js';

/** A direct S3 -> SQS body with one record per `[eventName, key]`. */
function s3Body(records: Array<[string, string]>, bucket = 'landing'): string {
  return JSON.stringify({
    Records: records.map(([eventName, key], i) => ({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: 'us-east-1',
      eventTime: '2026-12-02T10:00:00.000Z',
      eventName,
      s3: {
        s3SchemaVersion: '1.0',
        bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` },
        object: { key, size: 42 + i, eTag: `etag${i}`, sequencer: `0055AED6DCD9028${i}` },
      },
    })),
  });
}

function snsBody(message: string): string {
  return JSON.stringify({
    Type: 'Notification',
    MessageId: 'a1b2',
    TopicArn: 'arn:aws:sns:us-east-1:123456789012:landing-events',
    Subject: 'Amazon S3 Notification',
    Message: message,
    Timestamp: '2026-12-02T10:00:01.000Z',
    SignatureVersion: '1',
  });
}

function eventBridgeBody(detailType: string, key: string): string {
  return JSON.stringify({
    version: '0',
    id: '17793124-05d4-b198-2fde-7ededc63b103',
    'detail-type': detailType,
    source: 'aws.s3',
    account: '123456789012',
    time: '2026-12-02T10:00:00Z',
    region: 'us-east-1',
    resources: ['arn:aws:s3:::landing'],
    detail: {
      version: '0',
      bucket: { name: 'landing' },
      object: { key, size: 5, etag: 'b1946ac9', sequencer: '617f08299329d189' },
      reason: 'PutObject',
    },
  });
}

describe('parseBody', () => {
  it('reads direct S3 records: every record, created or not, keys decoded', () => {
    const parsed = parseBody(
      s3Body([
        ['ObjectCreated:Put', 'orders/2026/a+b%2Bc.csv'],
        ['ObjectRemoved:Delete', 'orders/x.csv'],
        ['ObjectCreated:CompleteMultipartUpload', 'orders/%C3%A9t%C3%A9.csv'],
      ]),
    );
    expect(parsed).toEqual({
      kind: 's3',
      events: [
        {
          bucket: 'landing',
          key: 'orders/2026/a b+c.csv',
          created: true,
          name: 'ObjectCreated:Put',
          etag: 'etag0',
          size: 42,
          sequencer: '0055AED6DCD90280',
        },
        {
          bucket: 'landing',
          key: 'orders/x.csv',
          created: false,
          name: 'ObjectRemoved:Delete',
          etag: 'etag1',
          size: 43,
          sequencer: '0055AED6DCD90281',
        },
        {
          bucket: 'landing',
          key: 'orders/été.csv',
          created: true,
          name: 'ObjectCreated:CompleteMultipartUpload',
          etag: 'etag2',
          size: 44,
          sequencer: '0055AED6DCD90282',
        },
      ],
    });
  });

  it('reads S3 records inside an SNS notification, and with raw message delivery as direct ones', () => {
    const inner = s3Body([['ObjectCreated:Copy', 'orders/b.csv']]);
    const viaSns = parseBody(snsBody(inner));
    expect(viaSns.kind).toBe('sns');
    expect(viaSns.kind === 'sns' && viaSns.events.map((e) => [e.key, e.created])).toEqual([
      ['orders/b.csv', true],
    ]);
    expect(parseBody(inner).kind).toBe('s3');
  });

  it('reads EventBridge events, their key as written (no URL decoding), only Object Created as created', () => {
    const created = parseBody(eventBridgeBody('Object Created', 'orders/a+b%20c.csv'));
    expect(created).toEqual({
      kind: 'eventbridge',
      events: [
        {
          bucket: 'landing',
          key: 'orders/a+b%20c.csv',
          created: true,
          name: 'Object Created',
          etag: 'b1946ac9',
          size: 5,
          sequencer: '617f08299329d189',
        },
      ],
    });
    const deleted = parseBody(eventBridgeBody('Object Deleted', 'orders/a.csv'));
    expect(deleted.kind === 'eventbridge' && deleted.events[0]!.created).toBe(false);
  });

  it('knows the test event S3 sends when a notification is set up', () => {
    const body = JSON.stringify({
      Service: 'Amazon S3',
      Event: 's3:TestEvent',
      Time: '2026-12-02T10:00:00.000Z',
      Bucket: 'landing',
      RequestId: 'R',
      HostId: 'H',
    });
    expect(parseBody(body)).toEqual({ kind: 'test' });
    expect(parseBody(snsBody(body))).toEqual({ kind: 'test' });
  });

  it('names what it cannot read, and never throws', () => {
    const why = (body: string) => {
      const parsed = parseBody(body);
      return parsed.kind === 'unreadable' ? parsed.why : `read as ${parsed.kind}`;
    };
    expect(why('not json')).toBe('the body is not JSON');
    expect(why('[1]')).toBe('the body is not a JSON object');
    expect(why('{"hello": 1}')).toMatch(/neither S3 event records/);
    expect(why(JSON.stringify({ Records: [{ eventName: 'ObjectCreated:Put' }] }))).toBe(
      'record 0 lacks eventName, s3.bucket or s3.object',
    );
    expect(why(s3Body([['ObjectCreated:Put', 'bad%E0%A4%A']]))).toMatch(
      /record 0: s3.object.key "bad%E0%A4%A" is not URL-encoded text/,
    );
    expect(why(snsBody('not json'))).toBe('an SNS notification whose Message is not JSON');
    expect(why(snsBody(snsBody(s3Body([['ObjectCreated:Put', 'a']]))))).toBe(
      'an SNS notification inside an SNS notification',
    );
    expect(
      why(
        JSON.stringify({
          source: 'aws.s3',
          'detail-type': 'Object Created',
          detail: { bucket: { name: 'b' } },
        }),
      ),
    ).toMatch(/without detail.bucket.name or detail.object.key/);
  });

  it('decodes every key S3 encodes back to itself (form encoding: space as +)', () => {
    // S3 encodes keys as application/x-www-form-urlencoded text: encodeURIComponent, then %20 as +.
    const encode = (key: string) => encodeURIComponent(key).replace(/%20/g, '+');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), (key) => {
        expect(decodeEventKey(encode(key))).toBe(key);
        const parsed = parseBody(s3Body([['ObjectCreated:Put', encode(key)]]));
        expect(parsed.kind === 's3' && parsed.events[0]!.key).toBe(key);
      }),
    );
  });
});
