/**
 * One gzip member (RFC 1952) assembled from pieces deflated apart, as pigz does: each piece is raw
 * deflate ending in a sync flush (an empty stored block, so the next piece starts on a byte), the
 * last one ending the stream; the member's CRC-32 is the pieces' CRCs combined. A piece may be
 * deflated with the bytes just before it as its dictionary: those are exactly the window a decoder
 * holds when it reaches the piece, so back-references into them decode right.
 */
import zlib from 'node:zlib';

/** Deflate's window: a dictionary longer than this is cut to its end. */
export const WINDOW_BYTES = 32 * 1024;

/** zlib's default level: the one `gzip -6` and nginx's `gzip_static` files are made with. */
const LEVEL = 6;

/** Magic, deflate, no flags, no modification time, no extra flags, unknown OS: the same bytes for the same data. */
export const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/**
 * Raw deflate of `data`, ending in a sync flush (more pieces follow) or the stream's end (`last`).
 * Its output buffer is sized to the piece (`outputChunkSize`), not zlib's default 16 KiB: each one
 * is garbage once its piece is written, and a cycle deflating thousands of pieces leaves them all to
 * the collector, in this thread and in the deflate worker alike.
 */
export function deflatePiece(data: Uint8Array, dictionary: Uint8Array | undefined, last: boolean): Buffer {
  return zlib.deflateRawSync(data, {
    level: LEVEL,
    chunkSize: outputChunkSize(data.length),
    finishFlush: last ? zlib.constants.Z_FINISH : zlib.constants.Z_SYNC_FLUSH,
    ...(dictionary !== undefined && dictionary.length > 0 ? { dictionary: dictionary.subarray(-WINDOW_BYTES) } : {}),
  });
}

/**
 * Room for a piece's deflated bytes in one buffer, most times: JSON text deflates to well under half
 * its size. A piece that needs more gets further buffers, joined; the bytes are the same either way.
 */
export const outputChunkSize = (length: number): number => Math.max(zlib.constants.Z_MIN_CHUNK, (length >>> 1) + 256);

/** CRC-32 (the gzip one) of `data`. */
export function crc32(data: Uint8Array): number {
  return zlib.crc32(data) >>> 0;
}

/** The member's last 8 bytes: CRC-32 and length modulo 2^32, little-endian. */
export function gzipTrailer(crc: number, length: number): Buffer {
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(length % 2 ** 32, 4);
  return trailer;
}

const POLYNOMIAL = 0xedb88320;

/**
 * a(x) * b(x) modulo the CRC polynomial, in the reflected bit order CRC-32 uses (zlib's multmodp),
 * without branches: a branch per bit of `a`, taken at random, cost several times the arithmetic,
 * and a variant appends a product for each of its tens of thousands of pieces.
 */
function multiplyModP(a: number, b: number): number {
  let product = 0;
  for (let i = 0; i < 32; i++) {
    product ^= b & ((a << i) >> 31); // b when a's bit for x^i is set, else 0
    b = (b >>> 1) ^ (POLYNOMIAL & -(b & 1)); // b * x
  }
  return product >>> 0;
}

/** x^(2^k) modulo the polynomial, for k = 0..31. */
const X_TO_2_TO_K = ((): Uint32Array => {
  const table = new Uint32Array(32);
  let p = 0x40000000; // x^1
  table[0] = p;
  for (let k = 1; k < 32; k++) table[k] = p = multiplyModP(p, p);
  return table;
})();

/** x^(n * 2^k) modulo the polynomial (zlib's x2nmodp). */
function xPowerModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multiplyModP(X_TO_2_TO_K[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/**
 * x^(8 * b * 256^j) modulo the polynomial at [j * 256 + b], for each byte b of a length's byte j:
 * a length's shift in a product per nonzero byte, not one per set bit. Made on first use, each
 * entry from the one before it.
 */
let byteShifts: Uint32Array | undefined;

function byteShiftTable(): Uint32Array {
  if (byteShifts !== undefined) return byteShifts;
  const table = new Uint32Array(4 * 256);
  for (let j = 0; j < 4; j++) {
    const one = xPowerModP(256 ** j, 3);
    table[j * 256] = 0x80000000; // x^0
    for (let b = 1; b < 256; b++) table[j * 256 + b] = multiplyModP(one, table[j * 256 + b - 1]!);
  }
  return (byteShifts = table);
}

/**
 * x^(8 * length) modulo the polynomial: what appending `length` bytes does to a CRC-32 before it
 * (zlib's crc32_combine_gen). Kept with a piece, it makes appending that piece one product.
 */
export function lengthShift(length: number): number {
  if (length >= 2 ** 32) return xPowerModP(length, 3);
  const table = byteShiftTable();
  let shift = 0x80000000; // x^0
  for (let j = 0, n = length >>> 0; n > 0; j++, n >>>= 8) {
    const byte = n & 0xff;
    if (byte !== 0) shift = multiplyModP(table[j * 256 + byte]!, shift);
  }
  return shift;
}

/** The CRC-32 of A followed by B, from A's CRC, B's CRC and B's lengthShift (zlib's crc32_combine_op). */
export function crc32Append(crcA: number, crcB: number, shiftB: number): number {
  return (multiplyModP(shiftB, crcA) ^ crcB) >>> 0;
}

/** The CRC-32 of A followed by B, from A's CRC, B's CRC and B's length (zlib's crc32_combine). */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return crc32Append(crcA, crcB, lengthShift(lengthB));
}
