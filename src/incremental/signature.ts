/**
 * A row's signature: a fingerprint of everything renderUser reads from the row (every users column,
 * the decoration, badges, socials and ban rows) and of the account age it derives from the snapshot
 * time. With the same base URL and the same tool, equal signatures mean an identical User document,
 * so a rebuild can keep a profile without rendering, serialising and hashing it again.
 *
 * Each value is written with its type and length, so no two different rows share the text that is
 * hashed (a bio cannot "absorb" the next column by containing a separator).
 */
import type { StoreRow } from '../store/read.js';
import { fingerprint } from '../core/hash.js';

export function rowSignature(row: StoreRow, accountAgeDays: number): string {
  let text = `a${accountAgeDays}`;
  for (const value of row.user) text += encode(value);
  text += row.decoration === undefined ? 'D' : `d${encode(row.decoration[0])}${encode(row.decoration[1])}`;
  text += `b${row.badges.length}`;
  for (const badge of row.badges) text += encode(badge);
  text += `s${row.socials.length}`;
  for (const [platform, url] of row.socials) text += encode(platform) + encode(url);
  text += row.ban === undefined ? 'N' : `n${encode(row.ban[0])}${encode(row.ban[1])}${encode(row.ban[2])}`;
  return fingerprint(text);
}

function encode(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return `s${value.length}:${value}`;
    case 'number':
      return `n${value};`;
    case 'bigint':
      return `i${value};`;
    default:
      if (value === null) return 'z';
      if (value instanceof Uint8Array)
        return `x${value.length}:${Buffer.from(value.buffer, value.byteOffset, value.length).toString('hex')}`;
      return `o${String(value)};`;
  }
}
