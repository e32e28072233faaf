/**
 * tidemark's own version, read from the package.json next to the code (two folders up from
 * src/cli/ and from dist/cli/ alike), never from the working directory's.
 */
import { readFileSync } from 'node:fs';

let cached: string | null = null;

/** The `version` field of tidemark's package.json. */
export function tidemarkVersion(): string {
  cached ??= (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
  return cached;
}
