/**
 * Reads a JSON envelope (`{"success":...,"data":[...],"meta":{...}}`) from a file without holding
 * it as one string: the creators list reaches hundreds of megabytes at a million profiles. Each
 * element of the top-level `data` array is parsed and handed over on its own, in order; every other
 * top-level member is parsed and returned. Anything that is not well-formed JSON throws
 * JsonStreamError with the byte offset.
 *
 * The scan works on bytes: every structural character of JSON is ASCII, and no byte of a multi-byte
 * UTF-8 sequence is ASCII, so values are cut on byte boundaries and decoded whole.
 */
import { closeSync, openSync, readSync } from 'node:fs';

export class JsonStreamError extends Error {
  constructor(message: string, readonly offset: number) {
    super(`${message} at byte ${offset}`);
    this.name = 'JsonStreamError';
  }
}

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_BRACE = 0x7b, CLOSE_BRACE = 0x7d, OPEN_BRACKET = 0x5b,
  CLOSE_BRACKET = 0x5d, COMMA = 0x2c, COLON = 0x3a;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

const CHUNK = 1 << 20;

class ByteReader {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  /** File offset of buf[0]. */
  private base = 0;
  private eof = false;

  constructor(private readonly fd: number) {}

  get offset(): number {
    return this.base + this.pos;
  }

  /** Makes sure a byte is available; false at the end of the file. */
  private fill(): boolean {
    if (this.pos < this.buf.length) return true;
    if (this.eof) return false;
    // A fresh buffer per chunk: slices handed out earlier stay valid.
    const next = Buffer.allocUnsafe(CHUNK);
    const n = readSync(this.fd, next, 0, CHUNK, null);
    this.base += this.buf.length;
    this.pos = 0;
    this.buf = n === 0 ? Buffer.alloc(0) : next.subarray(0, n);
    if (n === 0) this.eof = true;
    return n > 0;
  }

  peek(): number {
    return this.fill() ? this.buf[this.pos]! : -1;
  }

  next(): number {
    return this.fill() ? this.buf[this.pos++]! : -1;
  }

  skipSpace(): void {
    while (this.fill()) {
      const b = this.buf[this.pos]!;
      if (!isSpace(b)) return;
      this.pos++;
    }
  }

  expect(byte: number, what: string): void {
    const b = this.next();
    if (b !== byte) throw new JsonStreamError(`expected ${what}, found ${describe(b)}`, this.offset - (b === -1 ? 0 : 1));
  }

  /** The raw bytes of the next JSON value (checked for balance only; JSON.parse checks the rest). */
  rawValue(): string {
    const start = this.offset;
    const parts: Buffer[] = [];
    const first = this.peek();
    if (first === -1) throw new JsonStreamError('unexpected end of file', start);
    if (first === QUOTE) {
      this.pos++;
      parts.push(this.buf.subarray(this.pos - 1, this.pos));
      this.string(parts);
    } else if (first === OPEN_BRACE || first === OPEN_BRACKET) {
      this.container(parts);
    } else {
      this.scalar(parts);
    }
    if (parts.length === 0) throw new JsonStreamError(`unexpected ${describe(first)}`, start);
    return (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString('utf8');
  }

  /** After an opening quote: up to and including the closing quote. */
  private string(parts: Buffer[]): void {
    let backslashes = 0; // a run of backslashes that reaches the start of the current chunk
    for (;;) {
      if (!this.fill()) throw new JsonStreamError('unterminated string', this.offset);
      const { buf, pos } = this;
      const quote = buf.indexOf(QUOTE, pos);
      const stop = quote === -1 ? buf.length : quote;
      let run = 0;
      while (stop - run - 1 >= pos && buf[stop - run - 1] === BACKSLASH) run++;
      const total = run === stop - pos ? backslashes + run : run;
      if (quote === -1) {
        parts.push(buf.subarray(pos, buf.length));
        this.pos = buf.length;
        backslashes = total;
        continue;
      }
      parts.push(buf.subarray(pos, quote + 1));
      this.pos = quote + 1;
      if (total % 2 === 0) return;
      backslashes = 0; // an escaped quote ends any run
    }
  }

  private container(parts: Buffer[]): void {
    let depth = 0;
    for (;;) {
      if (!this.fill()) throw new JsonStreamError('unexpected end of file inside a value', this.offset);
      const { buf } = this;
      let i = this.pos;
      let done = false;
      let enteredString = false;
      for (; i < buf.length; i++) {
        const b = buf[i]!;
        if (b === QUOTE) { enteredString = true; i++; break; }
        if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++;
        else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
          if (--depth === 0) { i++; done = true; break; }
        }
      }
      parts.push(buf.subarray(this.pos, i));
      this.pos = i;
      if (done) return;
      if (enteredString) this.string(parts);
    }
  }

  private scalar(parts: Buffer[]): void {
    for (;;) {
      if (!this.fill()) return;
      const { buf } = this;
      let i = this.pos;
      while (i < buf.length) {
        const b = buf[i]!;
        if (b === COMMA || b === CLOSE_BRACE || b === CLOSE_BRACKET || isSpace(b)) break;
        i++;
      }
      if (i > this.pos) parts.push(buf.subarray(this.pos, i));
      this.pos = i;
      if (i < buf.length) return;
    }
  }

  atEnd(): boolean {
    this.skipSpace();
    return !this.fill();
  }
}

function describe(b: number): string {
  if (b === -1) return 'the end of the file';
  return b >= 0x20 && b < 0x7f ? `"${String.fromCharCode(b)}"` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}

function parse(raw: string, offset: number): unknown {
  try {
    return JSON.parse(raw);
  } catch (cause) {
    throw new JsonStreamError(cause instanceof Error ? cause.message : String(cause), offset);
  }
}

export interface EnvelopeScan {
  /** Every top-level member but `data` (when `data` is an array), parsed, in file order. */
  members: Map<string, unknown>;
  /** Whether a top-level `data` array was found (its elements went to `onElement`). */
  dataArray: boolean;
}

/**
 * Streams the envelope in `path`. `onElement(value, index)` gets each element of a top-level `data`
 * array, parsed on its own, in order.
 */
export function scanEnvelope(path: string, onElement: (value: unknown, index: number) => void): EnvelopeScan {
  const fd = openSync(path, 'r');
  try {
    const r = new ByteReader(fd);
    const members = new Map<string, unknown>();
    let dataArray = false;
    r.skipSpace();
    r.expect(OPEN_BRACE, 'an object ("{")');
    r.skipSpace();
    if (r.peek() === CLOSE_BRACE) {
      r.next();
    } else {
      for (;;) {
        r.skipSpace();
        const keyAt = r.offset;
        if (r.peek() !== QUOTE) throw new JsonStreamError(`expected a member name, found ${describe(r.peek())}`, keyAt);
        const key = parse(r.rawValue(), keyAt) as string;
        r.skipSpace();
        r.expect(COLON, '":"');
        r.skipSpace();
        if (key === 'data' && r.peek() === OPEN_BRACKET) {
          dataArray = true;
          members.delete('data');
          r.next();
          r.skipSpace();
          if (r.peek() === CLOSE_BRACKET) {
            r.next();
          } else {
            for (let index = 0; ; index++) {
              r.skipSpace();
              const at = r.offset;
              onElement(parse(r.rawValue(), at), index);
              r.skipSpace();
              const sep = r.next();
              if (sep === CLOSE_BRACKET) break;
              if (sep !== COMMA) throw new JsonStreamError(`expected "," or "]" after element ${index}, found ${describe(sep)}`, r.offset - (sep === -1 ? 0 : 1));
            }
          }
        } else {
          const at = r.offset;
          members.set(key, parse(r.rawValue(), at));
        }
        r.skipSpace();
        const sep = r.next();
        if (sep === CLOSE_BRACE) break;
        if (sep !== COMMA) throw new JsonStreamError(`expected "," or "}" after member ${JSON.stringify(key)}, found ${describe(sep)}`, r.offset - (sep === -1 ? 0 : 1));
      }
    }
    if (!r.atEnd()) throw new JsonStreamError('unexpected content after the document', r.offset);
    return { members, dataArray };
  } finally {
    closeSync(fd);
  }
}
