/**
 * What a run received from its queue, as the plan carries it: each message with the keys it waits
 * for, the messages that could not be read, and the counts the run reports.
 */
import type { ReceivedMessage } from '../../storage/sqs.js';
import type { EnvelopeKind } from './envelope.js';

/** A received message and what it waits for. */
export interface HeldMessage extends ReceivedMessage {
  kind: EnvelopeKind | 'test';
  /** Source-relative keys of the files it names that may need a load; empty: it needs nothing. */
  keys: string[];
}

/** What the queue held this run. */
export interface NotificationIntake {
  /** Every readable message received (unreadable ones are in `unreadable` only, and stay on the queue). */
  messages: HeldMessage[];
  unreadable: Array<{ id: string; why: string }>;
  counts: {
    messages: number;
    /** Object events in them. */
    events: number;
    /** Events of another bucket or outside the source prefix. */
    outside: number;
    /** Events of another kind than object created (removed, restored, …) and S3 test events. */
    notCreated: number;
    /** Keys whose object the store no longer holds (deleted since, or a key spelt otherwise). */
    gone: number;
  };
  /** True when this plan includes a reconciling listing of the whole prefix. */
  reconciled: boolean;
}
