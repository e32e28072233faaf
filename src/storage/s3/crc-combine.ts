/**
 * The CRC of two byte strings joined, from the CRCs of each and the second one's length
 * (zlib's crc32_combine, for any reflected CRC whose initial value equals its final XOR, as
 * CRC32, CRC32C and CRC64NVME's do). A multipart upload's full-object CRC is then its parts'
 * CRCs combined, each computed once for the part's own header: no second pass over the bytes.
 *
 * Values are the SDK's digests (big-endian bytes, ./checksums.ts); arithmetic is on BigInt
 * polynomials over GF(2), lowest degree in the top bit (the reflected order).
 */

/** Reflected polynomials, by the S3 name of the algorithm. */
const POLYNOMIALS = {
  CRC32: { width: 32, poly: 0xedb88320n },
  CRC32C: { width: 32, poly: 0x82f63b78n },
  CRC64NVME: { width: 64, poly: 0x9a6c9329ac4bc9b5n },
} as const;
export type CombinableCrc = keyof typeof POLYNOMIALS;
export const COMBINABLE_CRCS = Object.keys(POLYNOMIALS) as CombinableCrc[];

interface Field {
  width: number;
  poly: bigint;
  /** x^(2^k) mod p for k = 0, 1, …: enough for any length in bytes below 2^64. */
  powers: bigint[];
}
const fields = new Map<CombinableCrc, Field>();

function fieldOf(crc: CombinableCrc): Field {
  let field = fields.get(crc);
  if (!field) {
    const { width, poly } = POLYNOMIALS[crc];
    field = { width, poly, powers: [] };
    let p = 1n << BigInt(width - 2); // x^1
    for (let k = 0; k < 67; k++) {
      field.powers.push(p);
      p = multiply(field, p, p);
    }
    fields.set(crc, field);
  }
  return field;
}

/** a·b mod p. */
function multiply(field: Field, a: bigint, b: bigint): bigint {
  let m = 1n << BigInt(field.width - 1);
  let product = 0n;
  for (;;) {
    if (a & m) {
      product ^= b;
      if ((a & (m - 1n)) === 0n) break;
    }
    m >>= 1n;
    b = b & 1n ? (b >> 1n) ^ field.poly : b >> 1n;
  }
  return product;
}

/** x^(8·bytes) mod p: what shifting a CRC past `bytes` more bytes multiplies it by. */
function shiftOf(field: Field, bytes: number): bigint {
  let p = 1n << BigInt(field.width - 1); // x^0
  let n = BigInt(bytes);
  let k = 3; // 8 = 2^3 bits per byte
  while (n > 0n) {
    if (n & 1n) p = multiply(field, field.powers[k]!, p);
    n >>= 1n;
    k++;
  }
  return p;
}

function toBigInt(digest: Uint8Array): bigint {
  let v = 0n;
  for (const byte of digest) v = (v << 8n) | BigInt(byte);
  return v;
}

function toDigest(value: bigint, width: number): Uint8Array {
  const out = new Uint8Array(width / 8);
  for (let i = out.length - 1; i >= 0; i--) {
    out[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return out;
}

/** The CRC of A followed by B, from crc(A), crc(B) and B's length in bytes. */
export function combineCrc(
  crc: CombinableCrc,
  first: Uint8Array,
  second: Uint8Array,
  secondLength: number,
): Uint8Array {
  const field = fieldOf(crc);
  if (first.length * 8 !== field.width || second.length * 8 !== field.width) {
    throw new RangeError(
      `combineCrc: ${crc} digests are ${field.width / 8} bytes, got ${first.length} and ${second.length}`,
    );
  }
  if (secondLength === 0) return Uint8Array.from(first);
  return toDigest(
    multiply(field, shiftOf(field, secondLength), toBigInt(first)) ^ toBigInt(second),
    field.width,
  );
}

/** The CRC of the parts joined in order, from each part's CRC and length; undefined for no parts. */
export function combineCrcs(
  crc: CombinableCrc,
  parts: readonly { digest: Uint8Array; length: number }[],
): Uint8Array | undefined {
  const [head, ...rest] = parts;
  if (!head) return undefined;
  return rest.reduce((acc, part) => combineCrc(crc, acc, part.digest, part.length), head.digest);
}
