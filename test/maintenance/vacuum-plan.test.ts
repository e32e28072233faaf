/**
 * What VACUUM deletes (pure, no storage): only files the current snapshot does not reference, no
 * remove within the retention window names, and that are older than the cutoff. Log paths are
 * percent-encoded (decoded exactly once) and may be absolute URIs.
 */
import { describe, expect, it } from 'vitest';
import type { RemoveFile } from '../../src/delta/actions.js';
import type { LiveFile, Snapshot } from '../../src/delta/snapshot.js';
import { DeltaLogError } from '../../src/errors.js';
import { planVacuum } from '../../src/maintenance/vacuum-plan.js';
import type { ObjectInfo } from '../../src/storage/storage.js';

const ROOT = 's3://lake/orders/';
const DAY = 86_400_000;
const CUTOFF = Date.parse('2025-03-10T00:00:00Z');
const OLD = new Date(CUTOFF - 30 * DAY);
const YOUNG = new Date(CUTOFF + 1000);

function live(path: string): LiveFile {
  return {
    path,
    partitionValues: {},
    size: 1,
    modificationTime: 1,
    dataChange: true,
    parsedStats: null,
  };
}

function removed(path: string, deletionTimestamp: number | null): RemoveFile {
  return { path, deletionTimestamp, dataChange: true };
}

function snapshot(files: LiveFile[], removes: RemoveFile[] = [], tableUri = ROOT): Snapshot {
  return {
    tableUri,
    version: 9,
    protocol: { minReaderVersion: 1, minWriterVersion: 2 },
    metadata: {
      id: 'x',
      format: { provider: 'parquet', options: {} },
      schemaString: '{}',
      partitionColumns: [],
      configuration: {},
    },
    schema: { type: 'struct', fields: [] },
    partitionColumns: [],
    files,
    removes,
    txns: new Map(),
    domains: new Map(),
  };
}

function object(key: string, lastModified: Date): ObjectInfo {
  return { key, size: 10, lastModified, etag: key };
}

const deleted = (plan: ReturnType<typeof planVacuum>) => plan.toDelete.map((o) => o.key);

describe('planVacuum', () => {
  it('keeps live files, however old', () => {
    const plan = planVacuum({
      snapshot: snapshot([live('a.parquet'), live('day=1/b.parquet')]),
      objects: [object('a.parquet', OLD), object('day=1/b.parquet', OLD)],
      cutoff: CUTOFF,
    });
    expect(plan).toEqual({ toDelete: [], keptLive: 2, keptTombstoned: 0, keptYoung: 0 });
  });

  it('keeps old files removed within the retention window: a snapshot still in retention needs them', () => {
    const s = snapshot([], [removed('r.parquet', CUTOFF + 1)]);
    const plan = planVacuum({ snapshot: s, objects: [object('r.parquet', OLD)], cutoff: CUTOFF });
    expect(plan).toEqual({ toDelete: [], keptLive: 0, keptTombstoned: 1, keptYoung: 0 });
  });

  it('deletes old files whose remove is past retention (at the cutoff or before, or without a timestamp)', () => {
    const s = snapshot(
      [],
      [
        removed('at.parquet', CUTOFF),
        removed('before.parquet', CUTOFF - DAY),
        removed('untimed.parquet', null),
      ],
    );
    const objects = [
      object('at.parquet', OLD),
      object('before.parquet', OLD),
      object('untimed.parquet', OLD),
    ];
    const plan = planVacuum({ snapshot: s, objects, cutoff: CUTOFF });
    expect(deleted(plan)).toEqual(['at.parquet', 'before.parquet', 'untimed.parquet']);
    expect(plan).toMatchObject({ keptLive: 0, keptTombstoned: 0, keptYoung: 0 });
  });

  it('keeps unreferenced files modified at or after the cutoff: a writer may be uploading them for a commit to come', () => {
    const objects = [
      object('orphan-now.parquet', new Date(CUTOFF)),
      object('orphan-young.parquet', YOUNG),
    ];
    const plan = planVacuum({ snapshot: snapshot([]), objects, cutoff: CUTOFF });
    expect(plan).toEqual({ toDelete: [], keptLive: 0, keptTombstoned: 0, keptYoung: 2 });
  });

  it('keeps a young file even when its remove is past retention (clock skew between writer and store)', () => {
    const s = snapshot([], [removed('skewed.parquet', CUTOFF - DAY)]);
    expect(
      planVacuum({ snapshot: s, objects: [object('skewed.parquet', YOUNG)], cutoff: CUTOFF }),
    ).toMatchObject({ toDelete: [], keptYoung: 1 });
  });

  it('deletes old unreferenced files (orphans of failed commits) and nothing else, in listing order', () => {
    const s = snapshot(
      [live('live.parquet')],
      [removed('recent.parquet', CUTOFF + DAY), removed('expired.parquet', CUTOFF - DAY)],
    );
    const objects = [
      object('orphan-2.parquet', OLD),
      object('live.parquet', OLD),
      object('recent.parquet', OLD),
      object('expired.parquet', OLD),
      object('young.parquet', YOUNG),
      object('orphan-1.parquet', new Date(CUTOFF - 1)),
    ];
    const plan = planVacuum({ snapshot: s, objects, cutoff: CUTOFF });
    expect(deleted(plan)).toEqual(['orphan-2.parquet', 'expired.parquet', 'orphan-1.parquet']);
    expect(plan).toMatchObject({ keptLive: 1, keptTombstoned: 1, keptYoung: 1 });
  });

  it('decodes percent-encoded log paths exactly once before comparing them with storage keys', () => {
    const s = snapshot(
      [live('day=2025%2D03%2D01/a%20b.parquet'), live('c%2520d.parquet')],
      [removed('e%3Af.parquet', CUTOFF + DAY)],
    );
    const objects = [
      object('day=2025-03-01/a b.parquet', OLD), // live, encoded once
      object('c%20d.parquet', OLD), // live: %2520 decodes to %20, not to a space
      object('c d.parquet', OLD), // a different key: decoding twice would keep it
      object('e:f.parquet', OLD), // removed within retention
      object('a%20b.parquet', OLD), // an encoded key is not the decoded one
    ];
    const plan = planVacuum({ snapshot: s, objects, cutoff: CUTOFF });
    expect(deleted(plan)).toEqual(['c d.parquet', 'a%20b.parquet']);
    expect(plan).toMatchObject({ keptLive: 2, keptTombstoned: 1 });
  });

  it('matches absolute paths inside the table root to their keys, and ignores absolute paths outside it', () => {
    const s = snapshot(
      [
        live(`${ROOT}day=1/inside.parquet`),
        live('s3://lake/orders-archive/day=1/inside.parquet'),
        live('s3://other/orders/outside.parquet'),
      ],
      [
        removed('s3://elsewhere/removed.parquet', CUTOFF + DAY),
        removed(`${ROOT}kept.parquet`, CUTOFF + DAY),
      ],
    );
    const objects = [
      object('day=1/inside.parquet', OLD),
      object('outside.parquet', OLD),
      object('removed.parquet', OLD),
      object('kept.parquet', OLD),
    ];
    const plan = planVacuum({ snapshot: s, objects, cutoff: CUTOFF });
    // The sibling table's file and the other bucket's file name no key below this root.
    expect(deleted(plan)).toEqual(['outside.parquet', 'removed.parquet']);
    expect(plan).toMatchObject({ keptLive: 1, keptTombstoned: 1 });
  });

  it("keeps a live file the log names through Hadoop's s3a:// or s3n:// scheme on a table opened as s3://", () => {
    const s = snapshot(
      [live('s3a://lake/orders/x.parquet'), live('S3N://lake/orders/y.parquet')],
      [removed('s3a://lake/orders/r.parquet', CUTOFF + DAY)],
      's3://lake/orders/',
    );
    const objects = [
      object('x.parquet', OLD),
      object('y.parquet', OLD),
      object('r.parquet', OLD),
      object('orphan.parquet', OLD),
    ];
    const plan = planVacuum({ snapshot: s, objects, cutoff: CUTOFF });
    expect(deleted(plan)).toEqual(['orphan.parquet']);
    expect(plan).toMatchObject({ keptLive: 2, keptTombstoned: 1 });
  });

  it('matches file: URIs in the Hadoop form (file:/x) against a file:/// table root', () => {
    const s = snapshot([live('file:/data/t/a.parquet')], [], 'file:///data/t/');
    expect(
      planVacuum({ snapshot: s, objects: [object('a.parquet', OLD)], cutoff: CUTOFF }),
    ).toMatchObject({ toDelete: [], keptLive: 1 });
  });

  it('stops with a DeltaLogError naming the path when a log path cannot be decoded or leaves the root, rather than guess', () => {
    for (const path of ['bad%zz.parquet', '../other/a.parquet', `${ROOT}../escape.parquet`]) {
      let error: unknown;
      try {
        planVacuum({
          snapshot: snapshot([live(path)]),
          objects: [object('a.parquet', OLD)],
          cutoff: CUTOFF,
        });
      } catch (err) {
        error = err;
      }
      expect(error, path).toBeInstanceOf(DeltaLogError);
      expect((error as Error).message, path).toContain(JSON.stringify(path));
    }
  });

  it('plans nothing for an empty listing', () => {
    expect(
      planVacuum({ snapshot: snapshot([live('a.parquet')]), objects: [], cutoff: CUTOFF }),
    ).toEqual({ toDelete: [], keptLive: 0, keptTombstoned: 0, keptYoung: 0 });
  });
});
