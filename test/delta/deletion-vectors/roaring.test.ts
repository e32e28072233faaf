import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  parseRoaringBitmapArray,
  RowIndexSet,
  serializeRowIndexSet,
} from '../../../src/delta/deletion-vectors/index.js';
import { DeltaLogError } from '../../../src/errors.js';
import { bitmap32, nativeArray, portableArray } from './helpers.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const set = (...values: number[]) => RowIndexSet.fromIndexes(values);
const roundTrip = (s: RowIndexSet) => parseRoaringBitmapArray(serializeRowIndexSet(s));
const range = (from: number, to: number, step = 1) =>
  Array.from({ length: Math.ceil((to - from) / step) }, (_, i) => from + i * step);

/** A deterministic pseudo-random generator, so failures reproduce. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}

describe('RoaringBitmapArray: the byte-exact vectors of delta-notes-writers §1.4', () => {
  it('{0, 7, 14} is 38 bytes with CRC fd54c000', () => {
    const bytes = serializeRowIndexSet(set(0, 7, 14));
    expect(hex(bytes)).toBe(
      'd1d33964' +
        '0100000000000000' +
        '00000000' +
        '3a300000' +
        '01000000' +
        '0000' +
        '0200' +
        '10000000' +
        '0000' +
        '0700' +
        '0e00',
    );
    expect(crc32(bytes).toString(16).padStart(8, '0')).toBe('fd54c000');
  });

  it('{32} is 34 bytes with CRC 62229017, and {70, 81} is 36 bytes', () => {
    const one = serializeRowIndexSet(set(32));
    expect(one).toHaveLength(34);
    expect(crc32(one).toString(16).padStart(8, '0')).toBe('62229017');
    expect(serializeRowIndexSet(set(70, 81))).toHaveLength(36);
  });

  it('the empty set is the magic and a zero bucket count', () => {
    expect(hex(serializeRowIndexSet(RowIndexSet.empty()))).toBe('d1d33964' + '0000000000000000');
    expect(roundTrip(RowIndexSet.empty()).cardinality).toBe(0);
  });
});

describe('RoaringBitmapArray: write then read gives the same set', () => {
  it('small random sets', () => {
    const next = random(1);
    for (let t = 0; t < 200; t++) {
      const s = RowIndexSet.fromIndexes(
        range(0, Math.floor(next() * 50)).map(() => Math.floor(next() * 300_000)),
      );
      expect(roundTrip(s).equals(s)).toBe(true);
    }
  });

  it('a large sparse random set', () => {
    const next = random(2);
    const s = RowIndexSet.fromIndexes(range(0, 200_000).map(() => Math.floor(next() * 50_000_000)));
    expect(roundTrip(s).equals(s)).toBe(true);
  });

  it('dense ranges spanning several 65536-blocks use bitsets and still round-trip', () => {
    const s = RowIndexSet.fromIndexes([...range(60_000, 300_000), ...range(400_000, 410_000, 3)]);
    const bytes = serializeRowIndexSet(s);
    // Blocks 0 (5536 values), 1-3 (full) and 4 (37856 values) are bitsets; block 6 (3334 values) an array.
    expect(bytes.length).toBe(12 + 4 + 8 + 6 * 8 + 5 * 8192 + 2 * 3334);
    expect(roundTrip(s).equals(s)).toBe(true);
  });

  it('4096 values make an array container and 4097 a bitset', () => {
    expect(serializeRowIndexSet(RowIndexSet.fromIndexes(range(0, 4096)))).toHaveLength(
      12 + 4 + 8 + 8 + 8192,
    );
    expect(serializeRowIndexSet(RowIndexSet.fromIndexes(range(0, 4097)))).toHaveLength(
      12 + 4 + 8 + 8 + 8192,
    );
    expect(serializeRowIndexSet(RowIndexSet.fromIndexes(range(0, 8192, 2)))).toHaveLength(
      12 + 4 + 8 + 8 + 8192,
    );
    expect(serializeRowIndexSet(RowIndexSet.fromIndexes(range(0, 4095)))).toHaveLength(
      12 + 4 + 8 + 8 + 8190,
    );
    for (const n of [4095, 4096, 4097, 65536]) {
      const s = RowIndexSet.fromIndexes(range(65536 * 3, 65536 * 3 + n));
      expect(roundTrip(s).equals(s), `${n} values`).toBe(true);
    }
  });

  it('values above 2^32 go into several buckets, up to 2^53 - 1', () => {
    const s = set(
      0,
      5,
      2 ** 32 - 1,
      2 ** 32,
      2 ** 32 + 70_000,
      3 * 2 ** 32 + 12,
      2 ** 40 + 1,
      Number.MAX_SAFE_INTEGER,
    );
    const bytes = serializeRowIndexSet(s);
    expect(new DataView(bytes.buffer).getUint32(4, true)).toBe(5); // buckets 0, 1, 3, 2^8, 2^21 - 1
    expect(roundTrip(s).toArray()).toEqual(s.toArray());
  });
});

describe('RoaringBitmapArray: reading what Spark writes', () => {
  it('reads run containers with cookie 12347 and no offsets below 4 containers', () => {
    const bytes = portableArray([
      [
        0,
        bitmap32([
          {
            key: 0,
            runs: [
              [0, 9],
              [20, 20],
            ],
          },
          { key: 1, array: [5, 100] },
          { key: 2, bitset: range(0, 10_000, 2) },
        ]),
      ],
    ]);
    const expected = [
      ...range(0, 10),
      20,
      65536 + 5,
      65536 + 100,
      ...range(0, 10_000, 2).map((v) => 2 * 65536 + v),
    ];
    expect(parseRoaringBitmapArray(bytes).toArray()).toEqual(expected);
  });

  it('reads run containers with cookie 12347 and offsets from 4 containers on', () => {
    const containers = [
      { key: 0, array: [1, 2, 3] },
      {
        key: 7,
        runs: [
          [100, 199],
          [300, 300],
          [65_000, 65_535],
        ] as Array<[number, number]>,
      },
      { key: 8, runs: [[0, 65_535]] as Array<[number, number]> },
      { key: 9, bitset: range(1, 65_536, 7) },
      { key: 65_535, runs: [[65_535, 65_535]] as Array<[number, number]> },
    ];
    const bytes = portableArray([
      [0, bitmap32(containers)],
      [2, bitmap32([{ key: 0, runs: [[0, 3]] }])],
    ]);
    const expected = [
      1,
      2,
      3,
      ...range(7 * 65536 + 100, 7 * 65536 + 200),
      7 * 65536 + 300,
      ...range(7 * 65536 + 65_000, 8 * 65536),
      ...range(8 * 65536, 9 * 65536),
      ...range(1, 65_536, 7).map((v) => 9 * 65536 + v),
      2 ** 32 - 1,
      ...range(2 * 2 ** 32, 2 * 2 ** 32 + 4),
    ];
    const got = parseRoaringBitmapArray(bytes);
    expect(got.cardinality).toBe(expected.length);
    expect(got.toArray()).toEqual(expected);
  });

  it('reads a run cookie with no run container among its containers', () => {
    const bytes = portableArray([[0, bitmap32([{ key: 3, array: [9] }], { runCookie: true })]]);
    expect(parseRoaringBitmapArray(bytes).toArray()).toEqual([3 * 65536 + 9]);
  });

  it('reads the empty buckets Spark writes below the highest key', () => {
    const empty = bitmap32([]);
    const bytes = portableArray([
      [0, empty],
      [1, empty],
      [2, bitmap32([{ key: 0, array: [5] }])],
    ]);
    expect(parseRoaringBitmapArray(bytes).toArray()).toEqual([2 * 2 ** 32 + 5]);
  });

  it('reads the old native format (magic 1681511376), bucket keys by position', () => {
    const bytes = nativeArray([
      bitmap32([{ key: 0, array: [3, 4] }]),
      bitmap32([]),
      bitmap32([{ key: 1, runs: [[0, 1]] }]),
    ]);
    expect(parseRoaringBitmapArray(bytes).toArray()).toEqual([
      3,
      4,
      2 * 2 ** 32 + 65536,
      2 * 2 ** 32 + 65537,
    ]);
  });
});

describe('RoaringBitmapArray: malformed bitmaps are DeltaLogErrors saying what is wrong', () => {
  const good = () =>
    portableArray([
      [
        0,
        bitmap32([
          { key: 0, array: [1, 2] },
          { key: 1, bitset: range(0, 5000) },
        ]),
      ],
    ]);
  const withContext = { key: 'deletion_vector_x.bin', offset: 43, uri: 'file:///t/' };
  const cases: Array<[string, () => Uint8Array, RegExp]> = [
    [
      'an unknown magic',
      () => Uint8Array.from([1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0]),
      /unexpected magic number 67305985/,
    ],
    [
      'a truncated bitmap',
      () => good().subarray(0, good().length - 1),
      /ends after \d+ bytes, inside the bitset of container 1/,
    ],
    [
      'trailing bytes',
      () => Uint8Array.from([...good(), 0, 0]),
      /2 bytes left over after the bitmap/,
    ],
    [
      'an absurd bucket count',
      () => portableArray([]).fill(0xff, 4, 8),
      /bucket count \d+ does not fit/,
    ],
    [
      'bucket keys out of order',
      () =>
        portableArray([
          [3, bitmap32([])],
          [3, bitmap32([])],
        ]),
      /bucket keys are not ascending: 3 after 3/,
    ],
    [
      'a bucket key with its top bit set',
      () => portableArray([[2 ** 31, bitmap32([])]]),
      /key 2147483648, whose top bit is set/,
    ],
    [
      'a bucket above 2^53',
      () => portableArray([[2 ** 21, bitmap32([{ key: 0, array: [1] }])]]),
      /above 2\^53 - 1/,
    ],
    [
      'an unknown cookie',
      () => portableArray([[0, Uint8Array.from([0x3c, 0x30, 0, 0, 0, 0, 0, 0])]]),
      /cookie 12348/,
    ],
    [
      'too many containers',
      () => portableArray([[0, Uint8Array.from([0x3a, 0x30, 0, 0, 1, 0, 1, 0])]]),
      /claims 65537 containers/,
    ],
    [
      'container keys out of order',
      () =>
        portableArray([
          [
            0,
            bitmap32([
              { key: 2, array: [1] },
              { key: 1, array: [1] },
            ]),
          ],
        ]),
      /container keys are not ascending in bucket 0: 1 after 2/,
    ],
    [
      'array values out of order',
      () => portableArray([[0, bitmap32([{ key: 0, array: [5, 5] }])]]),
      /array values are not ascending \(5 after 5\)/,
    ],
    [
      'overlapping runs',
      () =>
        portableArray([
          [
            0,
            bitmap32([
              {
                key: 0,
                runs: [
                  [0, 10],
                  [10, 12],
                ],
              },
            ]),
          ],
        ]),
      /run 1 starts at 10, not after the previous run's end 10/,
    ],
    ['a run past 65535', () => tamperRun(), /runs past 65535/],
    [
      'a bitset whose count disagrees with its header',
      () => tamperCardinality(1),
      /the bitset holds 5000 values, but the header says 5001/,
    ],
    [
      'a run container whose count disagrees with its header',
      () => tamperRunCardinality(),
      /the runs hold 11 values, but the header says 12/,
    ],
    [
      'a wrong container offset',
      () => tamperOffset(),
      /container 1 \(key 1\) of bucket 0 has offset 99, but its data starts at 28/,
    ],
    [
      'a native bitmap longer than its length says',
      () => tamperNativeLength(),
      /bitmap 0 takes 18 bytes, but its length says 15/,
    ],
  ];

  function tamperCardinality(delta: number): Uint8Array {
    const bytes = good();
    const view = new DataView(bytes.buffer);
    // Header of container 1: after magic (4), count (8), key (4), cookie (4), count (4), header 0 (4): +2 for the cardinality.
    view.setUint16(4 + 8 + 4 + 8 + 4 + 2, view.getUint16(30, true) + delta, true);
    return bytes;
  }
  function tamperRun(): Uint8Array {
    const bytes = portableArray([[0, bitmap32([{ key: 0, runs: [[65_530, 65_535]] }])]]);
    // The run's length − 1 is the last u16.
    new DataView(bytes.buffer).setUint16(bytes.length - 2, 10, true);
    return bytes;
  }
  function tamperRunCardinality(): Uint8Array {
    const bytes = portableArray([[0, bitmap32([{ key: 0, runs: [[0, 10]] }])]]);
    // magic 4, count 8, key 4, cookie 4, flags 1, key 2, then cardinality − 1.
    new DataView(bytes.buffer).setUint16(23, 11, true);
    return bytes;
  }
  function tamperOffset(): Uint8Array {
    const bytes = portableArray([
      [
        0,
        bitmap32([
          { key: 0, array: [1, 2] },
          { key: 1, array: [3] },
        ]),
      ],
    ]);
    // magic 4, count 8, key 4, cookie 8, headers 8, then offsets 0 and 1.
    new DataView(bytes.buffer).setUint32(32 + 4, 99, true);
    return bytes;
  }
  function tamperNativeLength(): Uint8Array {
    const bytes = nativeArray([bitmap32([{ key: 0, array: [1] }])]);
    new DataView(bytes.buffer).setUint32(8, 15, true);
    return bytes;
  }

  it.each(cases)('%s', (_name, bytes, message) => {
    let err: unknown;
    try {
      parseRoaringBitmapArray(bytes(), withContext);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DeltaLogError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toContain(
      '[delta] deletion vector in "deletion_vector_x.bin" at offset 43',
    );
    expect((err as DeltaLogError).context).toMatchObject(withContext);
  });

  it('the untampered bitmap of those cases reads fine', () => {
    expect(parseRoaringBitmapArray(good()).cardinality).toBe(5002);
  });
});

describe('RoaringBitmapArray: scale', () => {
  it('round-trips 5 million row indexes (dense runs, strided and sparse values)', () => {
    const values = new Float64Array(5_000_000);
    for (let i = 0; i < 3_000_000; i++) values[i] = i; // full blocks: bitsets
    for (let i = 0; i < 1_500_000; i++) values[3_000_000 + i] = 4_000_000 + 3 * i; // strided: bitsets
    const next = random(3);
    for (let i = 0; i < 500_000; i++)
      values[4_500_000 + i] = 10_000_000 + Math.floor(next() * 2 ** 36); // sparse: arrays, many buckets
    const s = RowIndexSet.fromIndexes(values);
    const back = roundTrip(s);
    expect(back.cardinality).toBe(s.cardinality);
    expect(back.equals(s)).toBe(true);
    expect(back.max).toBe(s.max);
  });
});
