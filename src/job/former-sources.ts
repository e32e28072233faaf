/**
 * Where the table may hold a file of the job's source under another `_source_file`: the sources it
 * was loaded from before `source.uri` was edited (recorded by ./source-moved.ts), looked up by an
 * append that replaces a file's earlier rows (../engine/merge/source-files.ts).
 */

/**
 * A source the job's files were loaded from before `source.uri` was edited: a file whose key
 * (relative to the source now) starts with `strip` may be held in the table under the
 * `_source_file` `uri` + the rest of its key. `uri` is spelled as the source's Storage spells it.
 */
export interface FormerSource {
  uri: string;
  strip: string;
}

/** The names other than `current` the table may hold the file `key` under (pure). */
export function formerNames(
  former: readonly FormerSource[],
  key: string,
  current: string,
): string[] {
  const names = former
    .filter((f) => key.startsWith(f.strip))
    .map((f) => f.uri + key.slice(f.strip.length));
  return [...new Set(names)].filter((n) => n !== current);
}
