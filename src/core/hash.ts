/**
 * A short fingerprint of a document's data, to tell whether it changed since the last build: the
 * first 96 bits of its SHA-1, in base64url. Native SHA-1 measured as fast as the best JavaScript loop
 * hash, so there is no reason to settle for a weaker one.
 */
import * as crypto from 'node:crypto';
import { createHash, type Hash } from 'node:crypto';

/**
 * One-shot hashing (Node 20.12+, 21.7+) skips creating a Hash object per document, which costs
 * noticeably per profile; older Node 20 releases fall back to createHash().update().digest().
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/**
 * 32-bit FNV-1a over the UTF-8 bytes of `text`, as an unsigned integer: a quick hash of a name, for
 * a username's shard, where a list's gzip pieces end, and finding a name in a table. Not a
 * fingerprint: it only spreads names.
 */
export function fnv1a(text: string): number {
  let hash = FNV_OFFSET_BASIS;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // Publishable names are ASCII, one byte per character: only others need encoding.
    if (code >= 0x80) return fnv1aBytes(utf8.encode(text));
    hash = Math.imul(hash ^ code, FNV_PRIME);
  }
  return hash >>> 0;
}

function fnv1aBytes(bytes: Uint8Array): number {
  let hash = FNV_OFFSET_BASIS;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, FNV_PRIME);
  return hash >>> 0;
}

/** Characters of a fingerprint: 96 bits of base64url, one byte each as ASCII. */
export const FINGERPRINT_LENGTH = 16;

export function fingerprint(text: string): string {
  const digest = oneShot ? oneShot('sha1', text, 'base64url') : createHash('sha1').update(text).digest('base64url');
  return digest.slice(0, FINGERPRINT_LENGTH);
}

/** The same over text given in pieces (a list's members), without joining them. */
export class Fingerprint {
  private readonly hash: Hash = createHash('sha1');

  update(text: string | Uint8Array): this {
    this.hash.update(text);
    return this;
  }

  digest(): string {
    return this.hash.digest('base64url').slice(0, FINGERPRINT_LENGTH);
  }
}
