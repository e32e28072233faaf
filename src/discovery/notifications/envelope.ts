/**
 * What an SQS message body says about S3 objects (pure). Three shapes reach a queue:
 *
 *   S3 -> SQS           {"Records": [{"eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "s3": {...}}]}
 *   S3 -> SNS -> SQS    {"Type": "Notification", "Message": "<the S3 JSON above, as a string>"}
 *                       (with raw message delivery the body is the S3 JSON itself)
 *   S3 -> EventBridge   {"source": "aws.s3", "detail-type": "Object Created", "detail": {"bucket": ..., "object": ...}}
 *
 * plus S3's `s3:TestEvent`, sent once when a notification is configured. Keys in S3 event records
 * (direct or through SNS) are URL-encoded with `+` for a space (AWS's notification-content-structure
 * doc); EventBridge's `detail.object.key` is taken as written (its event-structure doc states no
 * encoding). A key the object store then does not hold is counted as gone, never guessed at
 * (./plan.ts); the reconciling listing loads the file under its real name.
 */

/** One object event of a message. */
export interface ObjectEvent {
  bucket: string;
  /** The object key, decoded. */
  key: string;
  /** True for an object created (any `ObjectCreated:*`, EventBridge `Object Created`). */
  created: boolean;
  /** `ObjectCreated:Put`, `ObjectRemoved:Delete`, `Object Created`, … as the envelope names it. */
  name: string;
  /** What the event says of the object (the store is asked again before a load: ./plan.ts). */
  etag?: string;
  size?: number;
  /** S3's per-key order of events (hex, longer is later when equal in prefix): for reports only. */
  sequencer?: string;
}

/** Which envelope a message came in. */
export type EnvelopeKind = 's3' | 'sns' | 'eventbridge';

/** A message body read. */
export type ParsedBody =
  | { kind: EnvelopeKind; events: ObjectEvent[] }
  /** `s3:TestEvent` (S3 sends one when a notification is set up): nothing to load. */
  | { kind: 'test' }
  /** Not a shape tidemark knows: left on the queue (its redrive policy decides), and named. */
  | { kind: 'unreadable'; why: string };

/** Read a message body; never throws. */
export function parseBody(body: string): ParsedBody {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'unreadable', why: 'the body is not JSON' };
  }
  return parseJson(json, false);
}

function parseJson(json: unknown, inSns: boolean): ParsedBody {
  if (!isObject(json)) return { kind: 'unreadable', why: 'the body is not a JSON object' };
  if (json['Event'] === 's3:TestEvent') return { kind: 'test' };
  if (Array.isArray(json['Records'])) return s3Records(json['Records'], inSns ? 'sns' : 's3');
  if (json['Type'] === 'Notification' && typeof json['Message'] === 'string') {
    if (inSns) return { kind: 'unreadable', why: 'an SNS notification inside an SNS notification' };
    let inner: unknown;
    try {
      inner = JSON.parse(json['Message']);
    } catch {
      return { kind: 'unreadable', why: 'an SNS notification whose Message is not JSON' };
    }
    const parsed = parseJson(inner, true);
    // An EventBridge event published through SNS is still EventBridge's shape; the envelope was SNS.
    return parsed.kind === 'eventbridge' ? { kind: 'sns', events: parsed.events } : parsed;
  }
  if (
    json['source'] === 'aws.s3' &&
    typeof json['detail-type'] === 'string' &&
    isObject(json['detail'])
  ) {
    return eventBridge(json['detail-type'], json['detail']);
  }
  return {
    kind: 'unreadable',
    why: 'neither S3 event records, an SNS notification nor an EventBridge S3 event',
  };
}

function s3Records(records: unknown[], kind: 's3' | 'sns'): ParsedBody {
  const events: ObjectEvent[] = [];
  for (const [i, r] of records.entries()) {
    const where = `record ${i}`;
    if (!isObject(r)) return { kind: 'unreadable', why: `${where} is not an object` };
    const name = r['eventName'];
    const s3 = r['s3'];
    if (
      typeof name !== 'string' ||
      !isObject(s3) ||
      !isObject(s3['bucket']) ||
      !isObject(s3['object'])
    ) {
      return { kind: 'unreadable', why: `${where} lacks eventName, s3.bucket or s3.object` };
    }
    const bucket = s3['bucket']['name'];
    const object = s3['object'];
    const rawKey = object['key'];
    if (typeof bucket !== 'string' || typeof rawKey !== 'string')
      return { kind: 'unreadable', why: `${where} lacks s3.bucket.name or s3.object.key` };
    const key = decodeEventKey(rawKey);
    if (key === null)
      return {
        kind: 'unreadable',
        why: `${where}: s3.object.key ${JSON.stringify(rawKey)} is not URL-encoded text`,
      };
    events.push({
      bucket,
      key,
      created: name.startsWith('ObjectCreated:') || name.startsWith('s3:ObjectCreated:'),
      name,
      ...described(object['eTag'], object['size'], object['sequencer']),
    });
  }
  return { kind, events };
}

function eventBridge(detailType: string, detail: Record<string, unknown>): ParsedBody {
  const bucket = isObject(detail['bucket']) ? detail['bucket']['name'] : undefined;
  const object = detail['object'];
  if (typeof bucket !== 'string' || !isObject(object) || typeof object['key'] !== 'string') {
    return {
      kind: 'unreadable',
      why: 'an EventBridge S3 event without detail.bucket.name or detail.object.key',
    };
  }
  return {
    kind: 'eventbridge',
    events: [
      {
        bucket,
        key: object['key'],
        created: detailType === 'Object Created',
        name: detailType,
        ...described(object['etag'], object['size'], object['sequencer']),
      },
    ],
  };
}

/** An S3 event record's key: form-encoded (`+` is a space, `%2B` a plus); null when the escapes are broken. */
export function decodeEventKey(raw: string): string | null {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

function described(
  etag: unknown,
  size: unknown,
  sequencer: unknown,
): Pick<ObjectEvent, 'etag' | 'size' | 'sequencer'> {
  return {
    ...(typeof etag === 'string' && etag !== '' ? { etag } : {}),
    ...(typeof size === 'number' && Number.isInteger(size) && size >= 0 ? { size } : {}),
    ...(typeof sequencer === 'string' && sequencer !== '' ? { sequencer } : {}),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
