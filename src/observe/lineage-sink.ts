/**
 * Where OpenLineage events go: appended as NDJSON to a file, and/or POSTed as JSON to an HTTP
 * endpoint (OpenLineage's HTTP transport: one event per request, e.g. Marquez's /api/v1/lineage).
 * Lineage is a side channel: a failed send is logged as a warning and never fails the run.
 */
import { appendFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../log/logger.js';
import { redactText } from '../log/redact.js';
import { makeFolder } from '../storage/make-folder.js';
import type { RunEvent } from './lineage-event.js';

/** Where to send events. */
export interface LineageTarget {
  /** NDJSON file the events are appended to. */
  file?: string;
  /** HTTP(S) URL each event is POSTed to. */
  url?: string;
  /** Per-request timeout of the HTTP POST, ms. */
  timeoutMs: number;
}

/** Sends events; `emit` never throws. */
export interface LineageSink {
  emit(event: RunEvent): Promise<void>;
}

/** A sink for `target`, logging failures on `logger`. */
export function lineageSink(target: LineageTarget, logger: Logger): LineageSink {
  return {
    async emit(event) {
      const sends: Promise<void>[] = [];
      if (target.file) sends.push(appendEvent(target.file, event));
      if (target.url) sends.push(postEvent(target.url, event, target.timeoutMs));
      const results = await Promise.allSettled(sends);
      for (const r of results) {
        if (r.status === 'rejected') {
          const message = redactText(
            r.reason instanceof Error ? r.reason.message : String(r.reason),
          );
          logger.warn(
            { job: event.job.name, eventType: event.eventType, error: message },
            'lineage event not delivered (the run goes on)',
          );
        }
      }
    },
  };
}

async function appendEvent(file: string, event: RunEvent): Promise<void> {
  await makeFolder(dirname(file));
  await appendFile(file, JSON.stringify(event) + '\n');
}

async function postEvent(url: string, event: RunEvent, timeoutMs: number): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(event),
    signal: AbortSignal.timeout(timeoutMs),
  });
  // Drain the body so the connection is released.
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) throw new Error(`[lineage] POST ${url} answered HTTP ${response.status}`);
}
