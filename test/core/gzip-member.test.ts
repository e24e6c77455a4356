/**
 * One gzip variant piece deflated (src/output/gzip-member.ts): the bytes zlib gives with its own
 * output buffer, from output buffers no larger than the piece.
 */
import { randomBytes } from 'node:crypto';
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { deflatePiece, WINDOW_BYTES } from '../../src/output/gzip-member.js';

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
