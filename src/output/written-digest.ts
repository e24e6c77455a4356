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

/** A chained digest's own part: its base, and the copied runs noted so far. */
interface Chain {
  readonly base: string;
  readonly runs: Hash;
  readonly noted: Float64Array;
  count: number;
}

export class WrittenDigest {
  private readonly freshBytes: Hash = createHash('sha256');
  private readonly chain: Chain | undefined;

  constructor(base?: string) {
    if (base !== undefined) this.chain = { base, runs: createHash('sha256'), noted: new Float64Array(RUNS_NOTED), count: 0 };
  }

  get chained(): boolean {
    return this.chain !== undefined;
  }

  /** Bytes written anew. */
  fresh(bytes: Uint8Array): void {
    this.freshBytes.update(bytes);
  }

  /** A run of `length` bytes copied from `from` in the base's file, landing at `at` in this one. */
  copied(at: number, from: number, length: number): void {
    const chain = this.chain;
    if (chain === undefined) throw new Error('bug: a copied run noted in a digest that is not chained');
    if (chain.count === chain.noted.length) hashNoted(chain);
    chain.noted[chain.count++] = at;
    chain.noted[chain.count++] = from;
    chain.noted[chain.count++] = length;
  }

  /** The digest, in hexadecimal (64 characters). */
  hex(): string {
    const chain = this.chain;
    if (chain === undefined) return this.freshBytes.digest('hex');
    hashNoted(chain);
    return createHash('sha256')
      .update(CHAIN_TAG)
      .update(`${chain.base}\n`)
      .update(this.freshBytes.digest())
      .update(chain.runs.digest())
      .digest('hex');
  }
}

function hashNoted(chain: Chain): void {
  chain.runs.update(new Uint8Array(chain.noted.buffer, 0, chain.count * Float64Array.BYTES_PER_ELEMENT));
  chain.count = 0;
}
