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
import { Layout } from '../discovery/layout.js';
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

/** The old and new layouts of a partition `layout` edited between runs, where they can be rebased. */
function editedLayouts(state: JobState, layout: string): { from: Layout; to: Layout } | null {
  const was = state.configuredAs?.discover;
  if (was?.by !== 'partition' || was.layout === layout || state.discovery?.mode !== 'partition')
    return null;
  try {
    const [from, to] = [Layout.parse(was.layout), Layout.parse(layout)];
    return from.granularity === to.granularity ? { from, to } : null;
  } catch {
    return null;
  }
}

/**
 * The keys (relative to the source) of the remembered files rebasedOnLayout would re-key: the
 * caller asks which are still in their old folders, as those files did not move.
 */
export function layoutRebaseKeys(state: JobState, layout: string): string[] {
  const layouts = editedLayouts(state, layout);
  if (!layouts || state.discovery?.mode !== 'partition') return [];
  return state.discovery.loaded
    .filter((e) => {
      const [old, now] = [layouts.from.prefixOf(e.partition), layouts.to.prefixOf(e.partition)];
      return old !== now && e.key.startsWith(old);
    })
    .map((e) => e.key);
}

/**
 * A partition `layout` edited between runs, of the same granularity (another one is refused by
 * discovery until a reset): the remembered files are re-keyed from each partition's old folder to
 * its new one, so the files of the lookback partitions moved into the new layout's folders are
 * known as loaded (kept as they were, every one of them was loaded again: in append mode, its rows
 * twice), and each such partition's old folder is kept (`formerSources`) for an append that
 * replaces a rewritten file's earlier rows. A key outside its partition's old folder stays as it
 * was. A partition a remembered file of which is still in its old folder (`stillThere`, keys from
 * layoutRebaseKeys) was not moved: it is left as it was, so a file of the same name in its new
 * folder is a new file, not a rewrite that would replace the old one's rows. `uri` is the job's
 * source. Pure.
 */
export function rebasedOnLayout(
  state: JobState,
  uri: string,
  layout: string,
  stillThere: ReadonlySet<string> = new Set(),
): JobState {
  const layouts = editedLayouts(state, layout);
  const discovery = state.discovery;
  if (!layouts || discovery?.mode !== 'partition') return state;
  const { from, to } = layouts;
  const unmoved = new Set(
    discovery.loaded.filter((e) => stillThere.has(e.key)).map((e) => e.partition),
  );
  const root = describeUri(uri).uri;
  const moved = new Map<string, FormerSource>();
  const loaded = discovery.loaded.map((e) => {
    const [old, now] = [from.prefixOf(e.partition), to.prefixOf(e.partition)];
    if (old === now || !e.key.startsWith(old) || unmoved.has(e.partition)) return e;
    moved.set(e.partition, { uri: root + old, strip: now });
    return { ...e, key: now + e.key.slice(old.length) };
  });
  if (moved.size === 0) return state;
  const kept = (state.formerSources ?? []).filter(
    (f) => ![...moved.values()].some((m) => m.uri === f.uri && m.strip === f.strip),
  );
  return {
    ...state,
    formerSources: [...kept, ...moved.values()],
    discovery: { ...discovery, loaded },
  };
}
