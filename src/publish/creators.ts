/**
 * The creators list: every active user, ordered by lower-cased username, each element the same bytes
 * as the data of that user's own document. Users arrive in id order, so their JSON is appended to a
 * scratch file as it comes (never all held in memory: over 500 MB at a million users) with only its
 * name, offset and length kept; `finish` sorts those and streams the list out of the scratch file.
 * The list's change hash is taken over the members' own hashes in order, so an unchanged list costs
 * no rewrite and no assembly.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { Fingerprint } from '../render/fingerprint.js';
import type { BufferedFileWriter } from './file-writer.js';
import type { OutputTransaction } from './tree.js';

/** Up to this size the scratch file is read back whole; beyond it, one positioned read per member. */
const READ_WHOLE_LIMIT = 32 * 2 ** 20;

export class CreatorsList {
  private readonly names: string[] = [];
  private readonly hashes: string[] = [];
  private readonly offsets: number[] = [];
  private readonly lengths: number[] = [];
  private readonly scratch: BufferedFileWriter;

  constructor(private readonly tx: OutputTransaction, private readonly readWholeLimit = READ_WHOLE_LIMIT) {
    this.scratch = tx.scratchFile();
  }

  get size(): number {
    return this.names.length;
  }

  add(name: string, userJson: string, hash: string): void {
    this.names.push(name);
    this.hashes.push(hash);
    this.offsets.push(this.scratch.bytesWritten);
    this.scratch.write(userJson);
    this.lengths.push(this.scratch.bytesWritten - this.offsets[this.offsets.length - 1]!);
  }

  /**
   * Publishes the list at `path` as `head` + JSON array + `tail()` (the envelope), rewriting it only
   * when its members or their data changed.
   */
  finish(path: string, head: string, tail: () => string): void {
    this.scratch.close();
    const { names, hashes, offsets, lengths } = this;
    // Lower-case ASCII names: code-unit order is "lower case, ascending".
    const order = Array.from(names.keys()).sort((a, b) => (names[a]! < names[b]! ? -1 : 1));
    const members = new Fingerprint();
    for (const i of order) members.update(hashes[i]!);
    this.tx.streamedFile(path, members.digest(), (sink) => {
      sink.write(`${head}[`);
      const fd = openSync(this.scratch.path, 'r');
      try {
        const whole = this.scratch.bytesWritten <= this.readWholeLimit ? readFileSync(fd) : undefined;
        let buffer = Buffer.alloc(whole ? 0 : 64 * 1024);
        order.forEach((i, position) => {
          if (position > 0) sink.write(',');
          const offset = offsets[i]!, length = lengths[i]!;
          if (whole) {
            sink.write(whole.subarray(offset, offset + length));
            return;
          }
          if (buffer.length < length) buffer = Buffer.alloc(length * 2);
          for (let done = 0; done < length;) done += readSync(fd, buffer, done, length - done, offset + done);
          sink.write(buffer.subarray(0, length));
        });
      } finally {
        closeSync(fd);
      }
      sink.write(`]${tail()}`);
    });
  }
}
