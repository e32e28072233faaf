/**
 * An SQS queue, as notification discovery uses it: receive every message there is (long polls of
 * 10 until one comes back empty), hide the received ones from other consumers for a visibility
 * timeout and extend it while they are held, delete them (only ever after the commit that loaded
 * their files: the caller's rule), or hand them back at once.
 *
 * The client sends each request to the queue URL's own host, so a queue on a local SQS
 * implementation (moto's server in the tests) needs no endpoint setting.
 * Credentials come from the standard AWS chain. Requests are retried by the SDK (standard mode);
 * a queue still failing is a StorageError the run may retry later (exit 4).
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type SQSClientConfig,
} from '@aws-sdk/client-sqs';
import { StorageError } from '../errors.js';

/** A message received and not yet deleted. */
export interface ReceivedMessage {
  id: string;
  /** The handle of this receipt (a message received again gets a new one). */
  receipt: string;
  body: string;
  /** How often SQS has handed it out (ApproximateReceiveCount), 1 on the first receipt. */
  receiveCount: number;
}

export interface SqsQueueOptions {
  url: string;
  region: string;
  /** Attempts per request (SDK standard retries); default 5. */
  maxAttempts?: number;
  /** Credentials other than the default chain's (tests). */
  credentials?: SQSClientConfig['credentials'];
}

/** Messages SQS hands out per receive (its maximum). */
const RECEIVE_BATCH = 10;
/** Seconds a receive waits for messages: long polling asks every SQS server, so an empty answer means an (almost) empty queue. */
const RECEIVE_WAIT_S = 1;

/** The region of an AWS queue URL (`sqs.<region>.amazonaws.com`, legacy `<region>.queue.amazonaws.com`), or null. */
export function queueRegion(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return null;
  }
  const m =
    /^sqs(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/.exec(host) ??
    /^([a-z0-9-]+)\.queue\.amazonaws\.com(?:\.cn)?$/.exec(host);
  if (m) return m[1]!;
  return host === 'queue.amazonaws.com' ? 'us-east-1' : null;
}

export class SqsQueue {
  readonly url: string;
  private readonly client: SQSClient;
  /** Requests sent, by kind, for the run report. */
  readonly requests = { receive: 0, changeVisibility: 0, delete: 0, attributes: 0 };

  constructor(opts: SqsQueueOptions) {
    this.url = opts.url;
    // An AWS queue URL names its endpoint; any other (a local SQS) is the endpoint itself, set so the
    // SDK does not warn on every request that the URL's host differs from the region's.
    const local = queueRegion(opts.url) === null;
    this.client = new SQSClient({
      region: opts.region,
      ...(local ? { endpoint: new URL(opts.url).origin } : {}),
      maxAttempts: opts.maxAttempts ?? 5,
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
    });
  }

  /**
   * Receive up to `max` messages, hidden for `visibilityS` seconds from now, until a long poll
   * comes back empty; each is told to `onReceived` as it arrives (to be extended while the rest are
   * received). Messages SQS hands out twice within the call (its at-least-once delivery) come back
   * once, with the newest receipt.
   */
  async receiveAll(
    max: number,
    visibilityS: number,
    onReceived: (m: ReceivedMessage) => void,
    signal?: AbortSignal,
  ): Promise<ReceivedMessage[]> {
    const byId = new Map<string, ReceivedMessage>();
    while (byId.size < max) {
      signal?.throwIfAborted();
      const answer = await this.send('receive', () =>
        this.client.send(
          new ReceiveMessageCommand({
            QueueUrl: this.url,
            MaxNumberOfMessages: Math.min(RECEIVE_BATCH, max - byId.size),
            WaitTimeSeconds: RECEIVE_WAIT_S,
            VisibilityTimeout: visibilityS,
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          }),
          signal ? { abortSignal: signal } : {},
        ),
      );
      const messages = answer.Messages ?? [];
      if (messages.length === 0) break;
      for (const m of messages) {
        if (m.MessageId === undefined || m.ReceiptHandle === undefined) continue;
        const received = {
          id: m.MessageId,
          receipt: m.ReceiptHandle,
          body: m.Body ?? '',
          receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? '1'),
        };
        byId.set(m.MessageId, received);
        onReceived(received);
      }
    }
    return [...byId.values()];
  }

  /** Set the visibility timeout of held messages to `seconds` from now (0: visible again at once); the receipts SQS refused. */
  async changeVisibility(receipts: readonly string[], seconds: number): Promise<string[]> {
    return this.perReceipt('changeVisibility', receipts, (entries) =>
      this.client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.url,
          Entries: entries.map((e) => ({ ...e, VisibilityTimeout: seconds })),
        }),
      ),
    );
  }

  /** Delete messages by receipt; the receipts SQS refused (their messages come back and are found loaded). */
  async delete(receipts: readonly string[]): Promise<string[]> {
    return this.perReceipt('delete', receipts, (entries) =>
      this.client.send(new DeleteMessageBatchCommand({ QueueUrl: this.url, Entries: entries })),
    );
  }

  /** One batch request per RECEIVE_BATCH receipts (SQS's most per batch); the receipts SQS refused. */
  private async perReceipt(
    kind: 'changeVisibility' | 'delete',
    receipts: readonly string[],
    request: (
      entries: Array<{ Id: string; ReceiptHandle: string }>,
    ) => Promise<{ Failed?: Array<{ Id?: string }> }>,
  ): Promise<string[]> {
    const failed: string[] = [];
    for (const chunk of chunks(receipts, RECEIVE_BATCH)) {
      const answer = await this.send(kind, () =>
        request(chunk.map((receipt, i) => ({ Id: String(i), ReceiptHandle: receipt }))),
      );
      for (const f of answer.Failed ?? []) failed.push(chunk[Number(f.Id)]!);
    }
    return failed;
  }

  /** What `validate` looks at: messages waiting (approximately), and whether a dead-letter queue takes the unreadable ones. */
  async describe(): Promise<{ messages: number; redrive: boolean }> {
    const answer = await this.send('attributes', () =>
      this.client.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.url,
          AttributeNames: ['ApproximateNumberOfMessages', 'RedrivePolicy'],
        }),
      ),
    );
    return {
      messages: Number(answer.Attributes?.ApproximateNumberOfMessages ?? 0),
      redrive: (answer.Attributes?.RedrivePolicy ?? '') !== '',
    };
  }

  close(): void {
    this.client.destroy();
  }

  private async send<T>(kind: keyof SqsQueue['requests'], request: () => Promise<T>): Promise<T> {
    this.requests[kind] += 1;
    try {
      return await request();
    } catch (err) {
      if ((err as { name?: string }).name === 'AbortError') throw err;
      const name = (err as { name?: string }).name ?? 'Error';
      const terminal =
        /NonExistentQueue|QueueDoesNotExist|AccessDenied|InvalidAddress|InvalidSecurity/.test(name);
      throw new StorageError(
        `[sqs] ${kind} on queue ${this.url} failed: ${name}: ${(err as Error).message}`,
        {
          kind: terminal ? 'terminal' : 'transient',
          context: { uri: this.url },
          cause: err,
        },
      );
    }
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
