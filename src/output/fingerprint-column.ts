/**
 * Data hashes (core/hash.ts's fingerprints) kept as their bytes, FINGERPRINT_LENGTH each, in one
 * growing buffer. A fingerprint string is a slice of its digest and keeps the whole digest alive:
 * about 80 bytes of heap for 16 characters, at a million members tens of megabytes held through a
 * pass's peak. The list needs them only as bytes (its change hash and its gzip pieces' keys).
 */
import { FINGERPRINT_LENGTH } from '../core/hash.js';

const FIRST_CAPACITY = 1024;

export class FingerprintColumn {
  private bytes = Buffer.alloc(0);
  private count = 0;

  /**
   * Appends the fingerprint `text` starts with (a data hash, or a manifest entry that starts with one).
   * A shorter text (an entry edited by hand) is padded with zero bytes, as the list always took it.
   */
  push(text: string): void {
    if ((this.count + 1) * FINGERPRINT_LENGTH > this.bytes.length) this.grow();
    const { bytes } = this;
    // A loop: a call into the encoder per member costs several times the copying.
    for (let c = 0, at = this.count * FINGERPRINT_LENGTH; c < FINGERPRINT_LENGTH; c++) bytes[at + c] = text.charCodeAt(c) || 0;
    this.count++;
  }

  /** Copies fingerprint `i` into `target` at `at`; returns the bytes copied. */
  copyTo(i: number, target: Buffer, at: number): number {
    if (i < 0 || i >= this.count) throw new RangeError(`bug: fingerprint ${i} of ${this.count}`);
    const { bytes } = this;
    // A loop, for the same reason as in push: a call per member into Buffer.copy costs more.
    for (let c = 0, from = i * FINGERPRINT_LENGTH; c < FINGERPRINT_LENGTH; c++) target[at + c] = bytes[from + c]!;
    return FINGERPRINT_LENGTH;
  }

  /** Lets go of every fingerprint and the memory they were in. */
  clear(): void {
    this.bytes = Buffer.alloc(0);
    this.count = 0;
  }

  private grow(): void {
    const capacity = Math.max(FIRST_CAPACITY, this.count * 2);
    const grown = Buffer.allocUnsafe(capacity * FINGERPRINT_LENGTH);
    this.bytes.copy(grown, 0, 0, this.count * FINGERPRINT_LENGTH);
    this.bytes = grown;
  }
}
