/**
 * One gzip variant piece deflated (src/output/gzip-member.ts): the bytes zlib gives with its own
 * output buffer, from output buffers no larger than the piece.
 */
import { randomBytes } from 'node:crypto';
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { crc32, crc32Append, crc32Combine, deflatePiece, lengthShift, WINDOW_BYTES } from '../../src/output/gzip-member.js';

/** About `bytes` of list-like JSON members. */
const members = (from: number, bytes: number): Buffer => {
  const parts: string[] = [];
  for (let i = from, size = 0; size < bytes; i++) {
    const member = JSON.stringify({ username: `user${i}`, bio: `bio of ${i}: ${'la '.repeat(i % 41)}`, views: (i * 7919) % 10007 });
    parts.push(member);
    size += member.length + 1;
  }
  return Buffer.from(parts.join(','));
};

/** zlib's own bytes for the piece, with its default output buffer. */
const reference = (data: Buffer, dictionary: Buffer | undefined, last: boolean): Buffer =>
  deflateRawSync(data, {
    level: constants.Z_DEFAULT_COMPRESSION,
    finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
    ...(dictionary !== undefined ? { dictionary: dictionary.subarray(-WINDOW_BYTES) } : {}),
  });

describe('a deflated piece', () => {
  const dictionary = members(0, 40_000);
  const cases: [string, Buffer][] = [
    ['list members', members(500, 6_000)],
    ['bytes that do not compress (several output buffers)', randomBytes(20_000)],
    ['one byte', Buffer.from('x')],
  ];

  it.each(cases)('is the bytes zlib gives for %s, with and without a dictionary, mid-stream and last', (_, data) => {
    for (const last of [false, true])
      for (const withDictionary of [undefined, dictionary])
        expect(deflatePiece(data, withDictionary, last).equals(reference(data, withDictionary, last))).toBe(true);
    const decoded = inflateRawSync(deflatePiece(data, undefined, true));
    expect(decoded.equals(data)).toBe(true);
  });

  it("asks for output buffers no larger than the piece, not zlib's default 16 KiB", () => {
    // Each one is garbage once the piece is written: thousands of them a cycle wait for the collector.
    const data = members(900, 6_000);
    const allocUnsafe = vi.spyOn(Buffer, 'allocUnsafe');
    try {
      const piece = deflatePiece(data, dictionary, false);
      expect(piece.length).toBeLessThan(data.length / 2);
      const asked = allocUnsafe.mock.calls.map(([size]) => size);
      expect(asked.length).toBeGreaterThan(0);
      expect(Math.max(...asked)).toBeLessThanOrEqual(data.length);
    } finally {
      allocUnsafe.mockRestore();
    }
  });
});

describe('the CRC-32 of pieces joined', () => {
  it("is zlib's CRC-32 of the joined bytes, for lengths of every byte width", () => {
    const lengths = [0, 1, 2, 7, 255, 256, 257, 4_095, 65_535, 65_536, 70_001, 1 << 20, (1 << 24) + 3];
    for (const lengthB of lengths) {
      const a = randomBytes(1 + (lengthB % 97));
      const b = randomBytes(lengthB);
      const joined = crc32(Buffer.concat([a, b]));
      expect(crc32Combine(crc32(a), crc32(b), lengthB)).toBe(joined);
      expect(crc32Append(crc32(a), crc32(b), lengthShift(lengthB))).toBe(joined);
    }
  });

  it('shifts past 2^32 bytes as two shorter shifts do', () => {
    // No test can hold 4 GiB: appending B shifts A's CRC, and two shifts in a row are one longer shift.
    const crcA = crc32(randomBytes(64));
    const pairs: [number, number][] = [
      [2 ** 32 - 5, 10],
      [2 ** 31, 2 ** 31 + 77],
      [123_456_789, 3 * 2 ** 31],
    ];
    for (const [first, second] of pairs) {
      expect(crc32Combine(crcA, 0, first + second)).toBe(crc32Combine(crc32Combine(crcA, 0, first), 0, second));
    }
  });
});
