/**
 * A `source.uri` edited between runs: the watermark and the remembered files carry over
 * (./config-change.ts says so). The state remembers files by their key relative to the source, so
 * a file that lies under both the old and the new URI (a narrower or a wider prefix) is re-keyed
 * relative to the new one: kept as it was, `sub/a.csv` under the old URI would be listed as `a.csv`
 * under `…/sub/`, taken for a new file and loaded again (in append mode, its rows twice); a key
 * outside the new source is dropped (it is never listed again). Between unrelated folders (a
 * source copied elsewhere with its layout) the keys stay as they were.
 * The re-keyed state commits with the run's first batch, so a crash after it loses nothing.
 */
import { describeUri } from '../storage/uri.js';
import type { JobState } from './state.js';

/** `state` with its remembered files keyed relative to `uri`, the job's source now (pure). */
export function rebasedOnSource(state: JobState, uri: string): JobState {
  const was = state.configuredAs?.source.uri;
  const discovery = state.discovery;
  if (was === undefined || was === uri || discovery === null || discovery.mode === 'notifications')
    return state;
  const from = canonical(was);
  const to = canonical(uri);
  if (from === null || to === null || from === to) return state;
  // Unrelated folders (a source copied elsewhere with its layout): the keys stay as they were.
  if (!from.startsWith(to) && !to.startsWith(from)) return state;
  // Nested: a key under both is re-keyed; one outside the new source can never be listed again.
  const rekey = (key: string) => {
    const full = from + key;
    return full.startsWith(to) && full.length > to.length ? full.slice(to.length) : null;
  };
  if (discovery.mode === 'partition')
    return { ...state, discovery: { ...discovery, loaded: rekeyed(discovery.loaded, rekey) } };
  // incrementalListing's key to list after: re-keyed into a narrower source; into a wider one the
  // keys outside the old source sort anywhere, so the next run lists it all and sets it anew.
  const { listAfter, ...rest } = discovery;
  const after = listAfter !== undefined && to.startsWith(from) ? rekey(listAfter) : null;
  return {
    ...state,
    discovery: {
      ...rest,
      loaded: rekeyed(discovery.loaded, rekey),
      ...(after !== null ? { listAfter: after } : {}),
    },
  };
}

function rekeyed<E extends { key: string }>(
  entries: readonly E[],
  rekey: (key: string) => string | null,
): E[] {
  return entries.flatMap((e) => {
    const key = rekey(e.key);
    return key === null ? [] : [{ ...e, key }];
  });
}

/** The folder a source URI names, ending with `/`, as keys spell it (no percent escapes); null: not a URI tidemark reads. */
function canonical(uri: string): string | null {
  try {
    const at = describeUri(uri);
    return at.kind === 's3' ? at.uri : `file:${at.path.replace(/\/+$/, '')}/`;
  } catch {
    return null;
  }
}
