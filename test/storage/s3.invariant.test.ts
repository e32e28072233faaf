/**
 * The read invariant (./read-invariant.ts) at 30 % faults: every read, of every kind, raises an
 * error or returns exactly the object's bytes. Driven two ways:
 * - by the mock S3 (test/helpers/inconsistent-s3.ts) answering deliberately inconsistent
 *   responses: wrong totals, late and early starts, lengths that disagree, no length, short 206s,
 *   206s without a range, short and shifted 200s, cuts and 5xx;
 * - by the fault proxy in front of s3rver: every transport fault and every wrong answer, and
 *   flipped bytes for whole-object reads (a read of part of an object has no checksum to catch them);
 * - the same in front of moto's S3 server when the run has one (the interop run: its own
 *   checksums and conditional requests, no emulation).
 *
 * `npm test` makes a few hundred reads of each; TIDEMARK_INVARIANT_READS=10000 makes that many
 * per driver. The seed is printed, with the outcome, so a failure replays.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../../scripts/lib/prng.js';
import { S3Storage } from '../../src/storage/s3.js';
import type { S3StorageOptions } from '../../src/storage/s3.js';
import { ANSWER_FAULT_KINDS, FAULT_KINDS, startFaultProxy } from '../helpers/fault-proxy.js';
import type { FaultKind, FaultProxy } from '../helpers/fault-proxy.js';
import { LIES, lyingPlanner, startInconsistentS3 } from '../helpers/inconsistent-s3.js';
import type { InconsistentS3 } from '../helpers/inconsistent-s3.js';
import { scaled } from '../helpers/machine.js';
import { MOTO_ENDPOINT } from '../helpers/moto.js';
import { FAST_RETRIES, startProxiedMoto, startProxiedS3 } from './fault-setup.js';
import type { ProxiedStore } from './fault-setup.js';
import { checkReads, RANGED_READS, READ_KINDS, WHOLE_READS } from './read-invariant.js';
import type { InvariantResult } from './read-invariant.js';

const RATE = 0.3;
const FULL = Number(process.env['TIDEMARK_INVARIANT_READS'] ?? 0);
const SEED = Number(process.env['TIDEMARK_INVARIANT_SEED'] ?? 20_260_121);

/** Patient enough that most reads get through 30 % faults; the budget never runs dry. */
const PATIENT: Partial<S3StorageOptions> = {
  ...FAST_RETRIES,
  maxAttempts: 8,
  retryBudget: 1e12,
  idleTimeoutMs: scaled(250),
};

let tmp: string;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-invariant-'));
});
afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** Print the outcome (seed first) and check it: no breach, every kind read, most reads through. */
function judge(
  name: string,
  result: InvariantResult,
  faults: Record<string, number>,
  expectedFaults: readonly string[],
): void {
  const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  const summary = {
    seed: result.seed,
    ms: result.ms,
    ok: result.ok,
    failed: result.failed,
    faults,
    errors: result.errors,
  };
  process.stdout.write(`[invariant] ${name}: ${JSON.stringify(summary)}\n`);
  expect(result.breaches, `seed ${result.seed}`).toEqual([]);
  for (const kind of READ_KINDS)
    expect(result.ok[kind] ?? 0, `${kind} (seed ${result.seed})`).toBeGreaterThan(0);
  expect(
    total(result.ok) / (total(result.ok) + total(result.failed)),
    `share of reads through (seed ${result.seed})`,
  ).toBeGreaterThan(0.8);
  expect(Object.keys(faults).sort(), `faults injected (seed ${result.seed})`).toEqual(
    [...expectedFaults].sort(),
  );
}

describe('the read invariant on a mock S3 answering inconsistently', () => {
  let mock: InconsistentS3;
  let storage: S3Storage;
  beforeAll(async () => {
    mock = await startInconsistentS3('mock');
    storage = new S3Storage({
      bucket: 'mock',
      endpoint: mock.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'mock', secretAccessKey: 'mock' },
      ...PATIENT,
    });
  });
  afterAll(async () => {
    storage?.client.destroy();
    await mock?.stop();
  });

  const reads = FULL || 300;
  it(
    `mock S3: ${reads} reads (read, ranges, streams, downloads) at ${RATE * 100} % inconsistent answers raise an error or return exactly the object's bytes`,
    { timeout: Math.max(60_000, reads * 20) },
    async () => {
      const { planner, told } = lyingPlanner(RATE, prng(SEED + 1));
      mock.setPlanner(planner);
      const result = await checkReads(
        { storage: () => storage, put: async (key, body) => mock.put(key, body) },
        {
          reads,
          seed: SEED,
          kinds: READ_KINDS,
          objects: 24,
          maxSize: 70_000,
          concurrency: 4,
          tmp: path.join(tmp, 'mock'),
        },
      );
      judge('mock S3', result, told, LIES);
    },
  );
});

/** The invariant through the fault proxy in front of a store; ranged reads through a second proxy that never flips bytes. */
function throughProxy(
  storeName: string,
  start: () => Promise<{ env: ProxiedStore; ranged: FaultProxy }>,
): void {
  describe(`the read invariant through the fault proxy in front of ${storeName}`, () => {
    let env: ProxiedStore;
    let ranged: FaultProxy;
    beforeAll(async () => {
      ({ env, ranged } = await start());
    });
    afterAll(async () => {
      await ranged?.stop();
      await env?.stop();
    });

    const reads = FULL || 200;
    it(
      `fault injection: ${reads} reads at ${RATE * 100} % faults of every kind raise an error or return exactly the object's bytes`,
      { timeout: Math.max(120_000, reads * 60) },
      async () => {
        const prefix = `inv-${SEED}-${Date.now()}/`;
        const whole = env.storage(PATIENT, prefix);
        const parts = env.storage({ ...PATIENT, endpoint: ranged.endpoint }, prefix);
        const direct = env.direct(prefix);
        const allKinds: FaultKind[] = [...FAULT_KINDS, ...ANSWER_FAULT_KINDS];
        env.proxy.setRandom({ rate: 0 });
        ranged.setRandom({ rate: 0 });
        let seeded = false;
        const result = await checkReads(
          {
            storage: (kind) => {
              if (!seeded) {
                env.proxy.setRandom({ rate: RATE, kinds: allKinds, seed: SEED });
                ranged.setRandom({
                  rate: RATE,
                  kinds: allKinds.filter((k) => k !== 'corruptBody'),
                  seed: SEED + 2,
                });
                seeded = true;
              }
              return RANGED_READS.includes(kind) ? parts : whole;
            },
            put: (key, body) => direct.write(key, body),
          },
          {
            reads,
            seed: SEED,
            kinds: [...WHOLE_READS, ...RANGED_READS],
            objects: 16,
            maxSize: 70_000,
            concurrency: 4,
            tmp: path.join(tmp, storeName),
          },
        );
        env.proxy.setRandom({ rate: 0 });
        ranged.setRandom({ rate: 0 });
        const faults: Record<string, number> = {};
        for (const p of [env.proxy, ranged])
          for (const [k, n] of Object.entries(p.faults)) faults[k] = (faults[k] ?? 0) + (n ?? 0);
        judge(`proxy + ${storeName}`, result, faults, allKinds);
        // Whole-object reads were checked against the store's checksum (CRC64NVME, the uploads' default), not merely counted.
        expect(Object.keys(whole.checksumCounts().reads), `seed ${result.seed}`).toEqual([
          checkedAs[storeName],
        ]);
      },
    );
  });
}

/** What each store's whole-object reads are checked against. */
const checkedAs: Record<string, string> = { s3rver: 'CRC64NVME', moto: 'CRC64NVME' };

throughProxy('s3rver', async () => {
  const env = await startProxiedS3();
  return {
    env,
    ranged: await startFaultProxy({
      target: env.s3.endpoint,
      emulateConditionals: true,
      emulateChecksums: true,
    }),
  };
});

if (MOTO_ENDPOINT) {
  const endpoint = MOTO_ENDPOINT;
  throughProxy('moto', async () => {
    const env = await startProxiedMoto(endpoint);
    return { env, ranged: await startFaultProxy({ target: env.moto.endpoint }) };
  });
}
