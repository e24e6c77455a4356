/**
 * Byte ranges of one file, read by position: the creators list and its gzip variant are assembled
 * from pieces of earlier files (members, compressed pieces) without ever holding a whole one.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import type { BufferedFileWriter } from './file-writer.js';

/** The largest piece copied at once: a run of unchanged members may be most of a list of hundreds of megabytes. */
const COPY_CHUNK = 1 << 20;

/** Byte ranges of one file: from memory when it was read whole, else by positioned reads. */
export class PositionedReader {
  readonly fd: number;
  private readonly whole: Buffer | undefined;
  private buffer = Buffer.alloc(64 * 1024);

  constructor(
    private readonly path: string,
    readWhole: boolean,
  ) {
    this.fd = openSync(path, 'r');
    this.whole = readWhole ? readFileSync(this.fd) : undefined;
  }

  /** The bytes at [offset, offset + length): valid until the next read. */
  read(offset: number, length: number): Buffer {
    if (this.whole) return this.whole.subarray(offset, offset + length);
    if (this.buffer.length < length) this.buffer = Buffer.alloc(Math.max(length, this.buffer.length * 2));
    for (let done = 0; done < length;) {
      const read = readSync(this.fd, this.buffer, done, length - done, offset + done);
      // The manifest said these bytes are there: a shorter file was changed behind the tool's back.
      if (read === 0) throw new Error(`${this.path} ends at ${offset + done}, before the data the manifest places there`);
      done += read;
    }
    return this.buffer.subarray(0, length);
  }

  /** Streams [offset, offset + length) into `sink`, a bounded piece at a time. */
  copy(offset: number, length: number, sink: BufferedFileWriter): void {
    for (let done = 0; done < length;) {
      const piece = Math.min(COPY_CHUNK, length - done);
      sink.write(this.read(offset + done, piece));
      done += piece;
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}
