import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  uuidToZ85,
  z85Decode,
  z85Encode,
  z85ToUuid,
} from '../../../src/delta/deletion-vectors/index.js';
import { DeltaLogError } from '../../../src/errors.js';

describe('Z85', () => {
  it('encodes the UUIDs of the Spark test tables exactly (delta-notes-writers §1.3)', () => {
    expect(uuidToZ85('d12e7d16-e46d-48c9-8a71-b222c26dfc3b')).toBe('^jP?.<zvDfIGb{C.FPij');
    expect(uuidToZ85('44ccbf3f-b223-4581-9cd8-a7e569120ada')).toBe('m9JzgVlI!?Oy<+3x+y^b');
    expect(z85ToUuid('^jP?.<zvDfIGb{C.FPij')).toBe('d12e7d16-e46d-48c9-8a71-b222c26dfc3b');
    expect(z85ToUuid('m9JzgVlI!?Oy<+3x+y^b')).toBe('44ccbf3f-b223-4581-9cd8-a7e569120ada');
  });

  it('round-trips random UUIDs through 20 characters, upper-case input included', () => {
    for (let i = 0; i < 200; i++) {
      const uuid = randomUUID();
      const text = uuidToZ85(uuid.toUpperCase());
      expect(text).toHaveLength(20);
      expect(z85ToUuid(text)).toBe(uuid);
    }
  });

  it('round-trips the extremes of a 4-byte block', () => {
    const bytes = Uint8Array.from([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    expect(z85Encode(bytes)).toBe('00000%nSc0');
    expect(z85Decode('00000%nSc0')).toEqual(bytes);
  });

  it('pads unaligned input with zero bytes and returns only the requested length', () => {
    for (let length = 0; length < 13; length++) {
      const bytes = new Uint8Array(randomBytes(length));
      const text = z85Encode(bytes);
      expect(text).toHaveLength(Math.ceil(length / 4) * 5);
      expect(z85Decode(text, length)).toEqual(bytes);
      expect(z85Decode(text).subarray(length)).toEqual(
        new Uint8Array((text.length / 5) * 4 - length),
      );
    }
  });

  it('refuses text that is not Z85, naming the problem', () => {
    expect(() => z85Decode('abcd')).toThrow(/not a whole number of 5-character blocks/);
    expect(() => z85Decode('abc"e')).toThrow(DeltaLogError);
    expect(() => z85Decode('abc"e')).toThrow(/"\\"" at position 3 is not a Z85 character/);
    expect(() => z85Decode('abcé1')).toThrow(/not a Z85 character/);
    expect(() => z85Decode('#####')).toThrow(/more than 32 bits/);
    expect(() => z85Decode('00000', 5)).toThrow(/holds 4 bytes, fewer than the 5 expected/);
    expect(() => z85ToUuid('^jP?.<zvDfIGb{C.FPi')).toThrow(/has 20 characters, not 19/);
    expect(() => uuidToZ85('not-a-uuid')).toThrow(RangeError);
  });
});
