/**
 * Z85 (base 85) as Delta uses it for deletion vectors (PROTOCOL.md#Derived-Fields): each 4-byte
 * big-endian word becomes 5 characters, most significant first. Unaligned input is padded
 * with zero bytes, so the reader must know the real length. A UUID is its 16 bytes in the
 * order of its hex text, always 20 characters.
 */
import { corruptDv, type DvContext } from './corrupt.js';

const ALPHABET =
  '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';

/** Character code → digit, or -1. */
const DIGITS = (() => {
  const map = new Int8Array(128).fill(-1);
  for (let i = 0; i < ALPHABET.length; i++) map[ALPHABET.charCodeAt(i)] = i;
  return map;
})();

/** Length of a Z85-encoded UUID. */
export const Z85_UUID_LENGTH = 20;

const UUID_TEXT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Encode bytes as Z85, padding them with zero bytes to a multiple of 4 first (as Spark does). */
export function z85Encode(bytes: Uint8Array): string {
  const blocks = Math.ceil(bytes.length / 4);
  const padded = new Uint8Array(blocks * 4);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  const out = new Array<string>(blocks * 5);
  for (let b = 0; b < blocks; b++) {
    let word = view.getUint32(b * 4, false);
    for (let i = 4; i >= 0; i--) {
      out[b * 5 + i] = ALPHABET[word % 85]!;
      word = Math.floor(word / 85);
    }
  }
  return out.join('');
}

/**
 * Decode Z85 text. With `length`, only the first `length` bytes are returned (the rest is
 * padding). Text that is not whole 5-character blocks of the alphabet, or a block above
 * 2^32 − 1, is a DeltaLogError naming the problem.
 */
export function z85Decode(text: string, length?: number, context: DvContext = {}): Uint8Array {
  if (text.length % 5 !== 0)
    throw corruptDv(
      `Z85 text of ${text.length} characters is not a whole number of 5-character blocks`,
      context,
    );
  const bytes = new Uint8Array((text.length / 5) * 4);
  const view = new DataView(bytes.buffer);
  for (let b = 0; b < text.length / 5; b++) {
    let word = 0;
    for (let i = 0; i < 5; i++) {
      const code = text.charCodeAt(b * 5 + i);
      const digit = code < 128 ? DIGITS[code]! : -1;
      if (digit < 0)
        throw corruptDv(
          `${JSON.stringify(text[b * 5 + i])} at position ${b * 5 + i} is not a Z85 character`,
          context,
        );
      word = word * 85 + digit;
    }
    if (word > 0xffffffff)
      throw corruptDv(`Z85 block ${b} encodes ${word}, more than 32 bits`, context);
    view.setUint32(b * 4, word, false);
  }
  if (length === undefined) return bytes;
  if (length > bytes.length)
    throw corruptDv(
      `Z85 text holds ${bytes.length} bytes, fewer than the ${length} expected`,
      context,
    );
  return bytes.subarray(0, length);
}

/** The 20-character Z85 form of a UUID (`d12e7d16-e46d-…` → `^jP?.<zvDfIGb{C.FPij`). */
export function uuidToZ85(uuid: string): string {
  if (!UUID_TEXT.test(uuid)) throw new RangeError(`not a UUID: ${JSON.stringify(uuid)}`);
  return z85Encode(Buffer.from(uuid.replaceAll('-', ''), 'hex'));
}

/** The UUID (lower case, with dashes) that 20 Z85 characters encode. */
export function z85ToUuid(text: string, context: DvContext = {}): string {
  if (text.length !== Z85_UUID_LENGTH)
    throw corruptDv(
      `an encoded UUID has ${Z85_UUID_LENGTH} characters, not ${text.length}`,
      context,
    );
  const hex = Buffer.from(z85Decode(text, 16, context)).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
