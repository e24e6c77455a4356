/**
 * The digest a file's writer takes of what it writes (the manifest's digest line). It names the
 * bytes, not how they were made: two files with the same digest hold the same bytes.
 *
 * Plain, it is the SHA-256 of every byte. Chained, it is taken over a base: the digest of the file
 * that the bytes handed in as copied were read from (a watcher's last manifest, whose lines it
 * carries over). Then it is the SHA-256 of the base, of the bytes written anew in order, and of
 * where each copied run landed, where it came from and its length. Those determine the file byte
 * for byte, given the base: the copied runs at their places, the new bytes in the gaps, in order.
 * So it names the bytes as surely as the plain digest does, without hashing again the bytes carried
 * over (at a million profiles, nearly all of them every cycle).
 *
 * The same bytes written by another way (a build from scratch, another machine's watcher) get
 * another digest. Its one reader, the publish's quiet check, then compares the tree in full once.
 */
import { createHash, type Hash } from 'node:crypto';

/** Copied runs noted before they go into the hash: where each one landed, where from, its length. */
const RUNS_NOTED = 8192 * 3;
const CHAIN_TAG = 'profile-snapshot chained digest 1\n';

export class WrittenDigest {
  private readonly freshBytes: Hash = createHash('sha256');
  private readonly runs: Hash | undefined;
  private readonly noted: Float64Array | undefined;
  private notedCount = 0;

  constructor(private readonly base?: string) {
    if (base === undefined) return;
    this.runs = createHash('sha256');
    this.noted = new Float64Array(RUNS_NOTED);
  }

  get chained(): boolean {
    return this.base !== undefined;
  }

  /** Bytes written anew. */
  fresh(bytes: Uint8Array): void {
    this.freshBytes.update(bytes);
  }

  /** A run of `length` bytes copied from `from` in the base's file, landing at `at` in this one. */
  copied(at: number, from: number, length: number): void {
    const noted = this.noted;
    if (noted === undefined) throw new Error('bug: a copied run noted in a digest that is not chained');
    if (this.notedCount === noted.length) this.hashNoted();
    noted[this.notedCount++] = at;
    noted[this.notedCount++] = from;
    noted[this.notedCount++] = length;
  }

  /** The digest, in hexadecimal (64 characters). */
  hex(): string {
    if (this.base === undefined) return this.freshBytes.digest('hex');
    this.hashNoted();
    return createHash('sha256')
      .update(CHAIN_TAG)
      .update(`${this.base}\n`)
      .update(this.freshBytes.digest())
      .update(this.runs!.digest())
      .digest('hex');
  }

  private hashNoted(): void {
    this.runs!.update(new Uint8Array(this.noted!.buffer, 0, this.notedCount * Float64Array.BYTES_PER_ELEMENT));
    this.notedCount = 0;
  }
}
