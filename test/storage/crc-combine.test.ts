/**
 * combineCrc is the CRC of the bytes joined (property, against the SDK's own hashers over whole
 * byte strings): any split of any bytes, an empty part included, for CRC32, CRC32C and CRC64NVME.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Crc32, Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';
import { COMBINABLE_CRCS, combineCrc, combineCrcs } from '../../src/storage/s3/crc-combine.js';
import type { CombinableCrc } from '../../src/storage/s3/crc-combine.js';

const HASHERS = { CRC32: Crc32, CRC32C: Crc32c, CRC64NVME: Crc64Nvme } as const;

async function crcOf(crc: CombinableCrc, bytes: Uint8Array): Promise<Uint8Array> {
  const h = new HASHERS[crc]();
  h.update(bytes);
  return h.digest();
}

describe('combineCrc', () => {
  for (const crc of COMBINABLE_CRCS) {
    it(`${crc}: the parts' CRCs combined are the CRC of the parts joined, for any split`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 6 }),
          async (parts) => {
            const digests = await Promise.all(
              parts.map(async (p) => ({ digest: await crcOf(crc, p), length: p.length })),
            );
            const whole = await crcOf(crc, Buffer.concat(parts));
            expect(Buffer.from(combineCrcs(crc, digests)!).toString('hex')).toBe(
              Buffer.from(whole).toString('hex'),
            );
          },
        ),
        { numRuns: 150 },
      );
    });

    it(`${crc}: a long second part (5 MiB + 7 bytes) combines too`, async () => {
      const a = Buffer.from('tidemark');
      const b = Buffer.alloc(5 * 1024 * 1024 + 7, 0xa5);
      const combined = combineCrc(crc, await crcOf(crc, a), await crcOf(crc, b), b.length);
      expect(
        Buffer.from(combined).equals(Buffer.from(await crcOf(crc, Buffer.concat([a, b])))),
      ).toBe(true);
    });
  }

  it('refuses digests of the wrong width', () => {
    expect(() => combineCrc('CRC64NVME', new Uint8Array(4), new Uint8Array(4), 1)).toThrow(
      RangeError,
    );
  });
});
