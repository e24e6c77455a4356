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

/**
 * FNV-1a (32 bits, unsigned) over a text's code units: a quick hash of a name, for where a list's
 * gzip pieces end and for finding a name in a table. Not a fingerprint: it only spreads names.
 */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
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
