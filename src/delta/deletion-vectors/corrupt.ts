/**
 * The one way this folder reports bad deletion-vector data: a DeltaLogError whose message
 * starts with the subsystem and says what is wrong and where, with the same facts in context.
 */
import { DeltaLogError, type ErrorContext } from '../../errors.js';

/** Where a DV came from, for messages: the `.bin` key and offset, or the inline descriptor. */
export type DvContext = ErrorContext;

/** A DeltaLogError for corrupt or inconsistent DV data; `problem` says what is wrong. */
export function corruptDv(
  problem: string,
  context: DvContext = {},
  cause?: unknown,
): DeltaLogError {
  return new DeltaLogError(`[delta] deletion vector${where(context)}: ${problem}`, {
    kind: 'terminal',
    context,
    cause,
  });
}

/** ` in <key> at offset <n> (table <uri>)`, with whatever parts are known. */
function where(context: DvContext): string {
  const parts: string[] = [];
  if (context.key !== undefined) parts.push(`in ${JSON.stringify(context.key)}`);
  if (typeof context['offset'] === 'number') parts.push(`at offset ${context['offset']}`);
  if (typeof context['dataFile'] === 'string')
    parts.push(`of data file ${JSON.stringify(context['dataFile'])}`);
  if (context.uri !== undefined) parts.push(`(table ${context.uri})`);
  return parts.length ? ` ${parts.join(' ')}` : '';
}
