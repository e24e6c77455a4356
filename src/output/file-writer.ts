/**
 * Append-only writes to one file through a fixed 1 MiB buffer. Text is encoded into the buffer at
 * once, so the strings handed in die young: at a million profiles, batching strings instead kept
 * hundreds of megabytes of them alive long enough to reach V8's old generation.
 */
import { closeSync, openSync, writeSync, writevSync } from 'node:fs';
import { WrittenDigest } from './written-digest.js';

const BUFFER_SIZE = 1 << 20;
/** Byte chunks from this size on are written out as they are, not copied into the buffer. */
const DIRECT_BYTES = BUFFER_SIZE / 4;
/**
 * Copied runs from this size on are handed to the kernel where they are (one write of many ranges),
 * not copied into the buffer first: a manifest's unchanged lines, in runs of a few kilobytes in a
 * changing cycle, are nearly all of its bytes.
 */
const GATHERED_FROM = 1024;
/** Ranges in one gathered write (the kernel's IOV_MAX on Linux). */
const GATHERED_RANGES = 1024;
const TAB = 9,
  NEWLINE = 10;

/**
 * Copies a one-byte-per-character string into `buffer` at `at`; returns where it ends. For the
 * short strings of a manifest line a loop here costs less than a call into the encoder.
 */
function latin1Into(buffer: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) buffer[at++] = text.charCodeAt(i);
  return at;
}

/** A field's bytes kept by row elsewhere (an EntryMap's entries), copied into a line in place. */
export interface RowBytes {
  copyEntry(row: number, into: Uint8Array, at: number): number;
}

export class BufferedFileWriter {
  readonly path: string;
  /** Bytes handed to `write` so far (buffered ones included). */
  bytesWritten = 0;
  /** Bytes in the file so far (those still in the buffer not counted). */
  private bytesOut = 0;
  /** Told `bytesOut` after each write to the file (onWrittenOut). */
  private writtenOut: ((bytes: number) => void) | undefined;
  private fd: number | undefined;
  private readonly buffer = Buffer.allocUnsafe(BUFFER_SIZE);
  private used = 0;
  /** What goes out before the buffer's bytes from `segmentFrom` on: its earlier bytes and gathered runs, in order. */
  private readonly gathered: Uint8Array[] = [];
  private segmentFrom = 0;
  private digest: WrittenDigest | undefined;
  /** The buffer's bytes before this one are in the digest already, or are copied ones it names by their source. */
  private digestedTo = 0;

  /**
   * `translate` turns a filesystem error into the caller's own (an output error, say); `flags` is
   * 'w' (a new file) or 'a' (appending to the file as it is).
   */
  constructor(
    path: string,
    private readonly translate: (cause: unknown) => Error = (cause) => cause as Error,
    flags: 'w' | 'a' = 'w',
  ) {
    this.path = path;
    try {
      this.fd = openSync(path, flags);
    } catch (cause) {
      throw translate(cause);
    }
  }

  write(chunk: string | Uint8Array): void {
    this.put(chunk, false);
  }

  /**
   * Writes `bytes` copied from offset `from` of what the digest's base names (see digestFromHere): a
   * chained digest notes where they came from instead of hashing them again. Without one, as `write`.
   */
  writeCopied(bytes: Uint8Array, from: number): void {
    const digest = this.digest;
    if (digest?.chained !== true) return this.write(bytes);
    digest.copied(this.bytesWritten, from, bytes.length);
    // A gathered run never enters the buffer, so the fresh bytes around it stay side by side there
    // and are digested together later: one digest call per run cost more than its bytes.
    if (bytes.length >= GATHERED_FROM && bytes.length < DIRECT_BYTES) return this.gather(bytes);
    this.digestBuffered();
    this.put(bytes, true);
    this.digestedTo = this.used;
  }

  /** Queues `bytes` to go out where they are, after what the buffer holds so far. */
  private gather(bytes: Uint8Array): void {
    if (this.used > this.segmentFrom) this.gathered.push(this.buffer.subarray(this.segmentFrom, this.used));
    this.gathered.push(bytes);
    this.segmentFrom = this.used;
    this.bytesWritten += bytes.length;
    if (this.gathered.length >= GATHERED_RANGES - 1) this.flush();
  }

  private put(chunk: string | Uint8Array, copied: boolean): void {
    // A string of n UTF-16 units is at most 3n bytes of UTF-8: when that much room is left, encode it
    // straight in and take its length from the encoder (one pass over the text, not two).
    if (typeof chunk === 'string' && this.used + chunk.length * 3 <= BUFFER_SIZE) {
      const length = this.buffer.write(chunk, this.used);
      this.used += length;
      this.bytesWritten += length;
      return;
    }
    const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    if (this.used + length > BUFFER_SIZE || length >= DIRECT_BYTES) this.flush();
    // Large byte ranges (a run of list members copied from the last list) go straight out: copying
    // them through the buffer first would move every byte once more.
    if (length > BUFFER_SIZE || (length >= DIRECT_BYTES && typeof chunk !== 'string')) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (!copied) this.digest?.fresh(bytes);
      this.writeOut(bytes);
    } else if (typeof chunk === 'string') {
      this.buffer.write(chunk, this.used);
      this.used += length;
    } else {
      this.buffer.set(chunk, this.used);
      this.used += length;
    }
    this.bytesWritten += length;
  }

  /**
   * Writes `first<TAB>second<TAB>third<LF>`, every character one byte (ASCII, or latin1 text): a line
   * of the manifest, encoded in place without a string made for it (a million of them every cycle).
   */
  writeTabbedLine(first: string, second: string, third: string): void {
    const length = first.length + second.length + third.length + 3;
    if (this.used + length > BUFFER_SIZE) {
      if (length > BUFFER_SIZE) return this.write(Buffer.from(`${first}\t${second}\t${third}\n`, 'latin1'));
      this.flush();
    }
    const at = latin1Into(this.buffer, this.tabbedStart(first, second), third);
    this.tabbedEnd(at);
  }

  /**
   * As writeTabbedLine, the third field being `rows`' row `row` (`thirdLength` bytes, at most a
   * few dozen), copied from where it is kept: a watch cycle's changed manifest lines take their
   * entries so, not as a string made from the bytes to be encoded back into them.
   */
  writeTabbedRow(first: string, second: string, rows: RowBytes, row: number, thirdLength: number): void {
    if (this.used + first.length + second.length + thirdLength + 3 > BUFFER_SIZE) this.flush();
    this.tabbedEnd(rows.copyEntry(row, this.buffer, this.tabbedStart(first, second)));
  }

  /** Encodes `first<TAB>second<TAB>` at the buffer's end; returns where the third field goes. */
  private tabbedStart(first: string, second: string): number {
    const buffer = this.buffer;
    let at = latin1Into(buffer, this.used, first);
    buffer[at++] = TAB;
    at = latin1Into(buffer, at, second);
    buffer[at++] = TAB;
    return at;
  }

  /** Ends the line whose third field ends at `at`. */
  private tabbedEnd(at: number): void {
    this.buffer[at++] = NEWLINE;
    this.bytesWritten += at - this.used;
    this.used = at;
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      this.flush();
    } finally {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  private flush(): void {
    if (this.used === 0 && this.gathered.length === 0) return;
    this.digestBuffered();
    const { gathered } = this;
    if (this.used > this.segmentFrom) gathered.push(this.buffer.subarray(this.segmentFrom, this.used));
    this.used = this.digestedTo = this.segmentFrom = 0;
    if (gathered.length === 1) this.writeOut(gathered[0]!);
    else if (gathered.length > 1) this.writeGathered(gathered);
    gathered.length = 0;
  }

  /** Writes `chunks` one after the other, in one call where the kernel takes them all at once. */
  private writeGathered(chunks: Uint8Array[]): void {
    if (this.fd === undefined) throw new Error(`bug: ${this.path} is already closed`);
    let done: number;
    try {
      done = writevSync(this.fd, chunks);
    } catch (cause) {
      throw this.translate(cause);
    }
    this.wroteOut(done);
    for (const chunk of chunks) {
      if (done >= chunk.length) done -= chunk.length;
      else {
        this.writeOut(chunk.subarray(done));
        done = 0;
      }
    }
  }

  /**
   * Hands the buffer's bytes written anew since the last copied run put into it (or flush) to the
   * digest. The fresh bytes are a digest of their own (WrittenDigest), so they are handed over in
   * the order written, whenever that falls between the copied runs.
   */
  private digestBuffered(): void {
    if (this.digest !== undefined && this.used > this.digestedTo) this.digest.fresh(this.buffer.subarray(this.digestedTo, this.used));
    this.digestedTo = this.used;
  }

  /**
   * The digest of every byte written after this call, fed as the bytes go out (the manifest's digest
   * of itself: no second read of the file). With `base`, the digest of a file that bytes handed to
   * `writeCopied` come from, it is chained from that one (see WrittenDigest).
   */
  digestFromHere(base?: string): WrittenDigest {
    this.flush();
    return (this.digest = new WrittenDigest(base));
  }

  private writeOut(bytes: Uint8Array): void {
    if (this.fd === undefined) throw new Error(`bug: ${this.path} is already closed`);
    try {
      for (let done = 0; done < bytes.length;) done += writeSync(this.fd, bytes, done);
    } catch (cause) {
      throw this.translate(cause);
    }
    this.wroteOut(bytes.length);
  }

  /**
   * Calls `listener` with the bytes in the file after each write to it: another thread reading the
   * file (the gzip variant's deflate worker, as the list is written) may read that far.
   */
  onWrittenOut(listener: (bytes: number) => void): void {
    this.writtenOut = listener;
  }

  private wroteOut(bytes: number): void {
    this.bytesOut += bytes;
    this.writtenOut?.(this.bytesOut);
  }
}
