/**
 * `mkdir -p` that always ends. Node's `mkdir(dir, { recursive: true })` loops forever when a
 * parent exists but the folder cannot be made in it with ENOENT (a pseudo file system:
 * `/proc/nope/m.prom`), burning a core after the work is done. This one creates each missing
 * parent once and gives up with the error of the first folder that cannot be made.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Create `dir` and its missing parents; resolves when it is a folder, else rejects with the errno error. */
export async function makeFolder(dir: string): Promise<void> {
  const target = path.resolve(dir);
  const missing: string[] = [];
  // Walk up to the first folder that exists (or cannot be created for another reason than ENOENT).
  for (let at = target; ; at = path.dirname(at)) {
    const made = await tryMkdir(at);
    if (made === 'made') break;
    if (made === 'exists') {
      if (!(await stat(at)).isDirectory())
        throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${target}'`), {
          code: 'ENOTDIR',
          path: at,
        });
      break;
    }
    if (path.dirname(at) === at) throw made;
    missing.push(at);
  }
  // Then down again, once each: ENOENT here means the parent exists and still takes no folder.
  for (const at of missing.reverse()) {
    const made = await tryMkdir(at);
    if (made === 'made' || made === 'exists') continue;
    throw made;
  }
}

async function tryMkdir(dir: string): Promise<'made' | 'exists' | Error> {
  try {
    await mkdir(dir);
    return 'made';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return 'exists';
    if (code === 'ENOENT') return err as Error;
    throw err;
  }
}
