/**
 * A `source.uri` edited between runs: the watermark and the remembered files carry over
 * (./config-change.ts says so). The state remembers files by their key relative to the source, so
 * a file that lies under both the old and the new URI (a narrower or a wider prefix) is re-keyed
 * relative to the new one: kept as it was, `sub/a.csv` under the old URI would be listed as `a.csv`
 * under `…/sub/`, taken for a new file and loaded again (in append mode, its rows twice); a key
 * outside the new source is dropped (it is never listed again). Between unrelated folders (a
 * source copied elsewhere with its layout) the keys stay as they were, and the old URI is kept
 * (`formerSources`): the table holds the files loaded from there under their old `_source_file`,
 * where an append that replaces a file's earlier rows must find them (without it, a copied file
 * taken for a new version, or one rewritten after the move, was appended a second time).
 * The re-keyed state commits with the run's first batch, so a crash after it loses nothing.
 */
import { describeUri } from '../storage/uri.js';
import type { FormerSource } from './former-sources.js';
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
  // Unrelated folders (a source copied elsewhere with its layout): the keys stay as they were,
  // and the files loaded from the old folder are held under its name.
  if (!from.startsWith(to) && !to.startsWith(from)) {
    const old = { uri: describeUri(was).uri, strip: '' };
    const now = describeUri(uri).uri;
    const kept = (state.formerSources ?? []).filter(
      (f) => !(f.strip === '' && (f.uri === old.uri || f.uri === now)),
    );
    return { ...state, formerSources: [...kept, old] };
  }
  const formerSources = rebasedFormer(state.formerSources, from, to);
  // Nested: a key under both is re-keyed; one outside the new source can never be listed again.
  const rekey = (key: string) => {
    const full = from + key;
    return full.startsWith(to) && full.length > to.length ? full.slice(to.length) : null;
  };
  if (discovery.mode === 'partition')
    return {
      ...state,
      ...formerSources,
      discovery: { ...discovery, loaded: rekeyed(discovery.loaded, rekey) },
    };
  // incrementalListing's key to list after: re-keyed into a narrower source; into a wider one the
  // keys outside the old source sort anywhere, so the next run lists it all and sets it anew.
  const { listAfter, ...rest } = discovery;
  const after = listAfter !== undefined && to.startsWith(from) ? rekey(listAfter) : null;
  return {
    ...state,
    ...formerSources,
    discovery: {
      ...rest,
      loaded: rekeyed(discovery.loaded, rekey),
      ...(after !== null ? { listAfter: after } : {}),
    },
  };
}

/**
 * Former sources of a source moved into a folder of it (`to` inside `from`: keys lose that folder)
 * or around it (keys gain it); one that no key of the new source can be held under is dropped.
 */
function rebasedFormer(
  former: readonly FormerSource[] | undefined,
  from: string,
  to: string,
): { formerSources?: FormerSource[] } {
  if (former === undefined) return {};
  const moved = former.flatMap((f): FormerSource[] => {
    if (to.startsWith(from)) {
      const sub = to.slice(from.length);
      if (sub.startsWith(f.strip)) return [{ uri: f.uri + sub.slice(f.strip.length), strip: '' }];
      if (f.strip.startsWith(sub)) return [{ uri: f.uri, strip: f.strip.slice(sub.length) }];
      return [];
    }
    return [{ uri: f.uri, strip: from.slice(to.length) + f.strip }];
  });
  return { formerSources: moved };
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
