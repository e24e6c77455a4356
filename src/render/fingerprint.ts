/**
 * A fast 64-bit fingerprint of a document's data, to tell whether it changed since the last build.
 * Two independent 32-bit multiplicative hashes over the UTF-16 code units, plus the length. It is not
 * cryptographic and need not be: it only decides whether to rewrite a file, a wrong "unchanged" needs
 * a 2^-64 accident, and a SHA-1 per profile measured several times slower than the whole render.
 */
export function fingerprint(text: string): string {
  return new Fingerprint().update(text).digest();
}

/** The same fingerprint over text given in pieces (a list's members), without joining them. */
export class Fingerprint {
  private a = 0x811c9dc5 | 0;
  private b = 0x9747b28c | 0;
  private length = 0;

  update(text: string): this {
    let { a, b } = this;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
      b ^= b >>> 13;
    }
    this.a = a;
    this.b = b;
    this.length += text.length;
    return this;
  }

  digest(): string {
    let { a, b } = this;
    // Final avalanche so that nearby inputs spread over all bits.
    a ^= a >>> 16; a = Math.imul(a, 0x85ebca6b); a ^= a >>> 13; a = Math.imul(a, 0xc2b2ae35); a ^= a >>> 16;
    b ^= b >>> 15; b = Math.imul(b, 0x2c1b3c6d); b ^= b >>> 12; b = Math.imul(b, 0x297a2d39); b ^= b >>> 15;
    return `${(a >>> 0).toString(16).padStart(8, '0')}${(b >>> 0).toString(16).padStart(8, '0')}${this.length.toString(36)}`;
  }
}
