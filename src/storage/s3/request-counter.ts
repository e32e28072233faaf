/**
 * Counts the HTTP requests an S3Storage sends, by kind. The count is taken in each command's
 * own middleware stack, after the SDK's retry step, so it sees every attempt and only this
 * storage's commands (a client may be shared by several storages).
 */
import type { RequestCounts } from '../storage.js';

/** A shared, mutable tally; `snapshot` hands out copies. */
export class RequestCounter {
  private readonly counts: RequestCounts = { list: 0, get: 0, put: 0, head: 0, delete: 0 };

  snapshot(): RequestCounts {
    return { ...this.counts };
  }

  /** Count every attempt `command` makes; returns the command. */
  track<C extends { middlewareStack: { add: (...args: any[]) => void } }>(command: C): C {
    command.middlewareStack.add(
      (next: (args: { request: unknown }) => Promise<unknown>) =>
        async (args: { request: unknown }) => {
          const kind = kindOfRequest(
            args.request as { method?: string; query?: Record<string, unknown> },
          );
          if (kind) this.counts[kind]++;
          return next(args);
        },
      { step: 'finalizeRequest', priority: 'low', name: 'tidemarkCountRequests' },
    );
    return command;
  }
}

/** The kind of an S3 HTTP request, from its method and query (`?list-type=2`, `?delete`). */
export function kindOfRequest(request: {
  method?: string;
  query?: Record<string, unknown>;
}): keyof RequestCounts | undefined {
  const query = request.query ?? {};
  switch (request.method?.toUpperCase()) {
    case 'GET':
      return 'list-type' in query ? 'list' : 'get';
    case 'HEAD':
      return 'head';
    case 'DELETE':
      return 'delete';
    case 'POST':
      return 'delete' in query ? 'delete' : 'put';
    case 'PUT':
      return 'put';
    default:
      return undefined;
  }
}
