/**
 * Reads a JSON envelope (`{"success":...,"data":[...],"meta":{...}}`) from a file without holding
 * it as one string: the creators list reaches hundreds of megabytes at a million profiles. Each
 * element of the top-level `data` array is handed over on its own, in order; every other top-level
 * member is parsed and returned. Anything that is not well-formed JSON throws
 * JsonStreamError with the byte offset.
 *
 * The scan works on bytes: every structural character of JSON is ASCII, and no byte of a multi-byte
 * UTF-8 sequence is ASCII, so values are cut on byte boundaries and decoded whole.
 */
import { closeSync, openSync, readSync } from 'node:fs';

export class JsonStreamError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at byte ${offset}`);
    this.name = 'JsonStreamError';
  }
}

const QUOTE = 0x22,
  BACKSLASH = 0x5c,
  OPEN_BRACE = 0x7b,
  CLOSE_BRACE = 0x7d,
  OPEN_BRACKET = 0x5b,
  CLOSE_BRACKET = 0x5d,
  COMMA = 0x2c,
  COLON = 0x3a;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

const CHUNK = 1 << 20;
const STRING = 0,
  CONTAINER = 1,
  SCALAR = 2;

class ByteReader {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  /** File offset of buf[0]. */
  private base = 0;
  private eof = false;
  private readonly valueEnd = new ValueEnd();

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
    return this.rawBytes().toString('utf8');
  }

  rawBytes(): Buffer {
    const startOffset = this.offset;
    const first = this.peek();
    if (first === -1) throw new JsonStreamError('unexpected end of file', startOffset);
    const kind = first === QUOTE ? STRING : first === OPEN_BRACE || first === OPEN_BRACKET ? CONTAINER : SCALAR;
    const scan = this.valueEnd.start(kind);
    const parts: Buffer[] = [];
    let start = this.pos;
    if (kind === STRING) this.pos++;
    for (;;) {
      const end = scan.scan(this.buf, this.pos);
      if (end > start) parts.push(this.buf.subarray(start, end));
      this.pos = end;
      if (scan.done) break;
      if (!this.fill()) {
        if (kind === SCALAR) break;
        throw new JsonStreamError(scan.inString ? 'unterminated string' : 'unexpected end of file inside a value', this.offset);
      }
      start = this.pos;
    }
    if (parts.length === 0) throw new JsonStreamError(`unexpected ${describe(first)}`, startOffset);
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  atEnd(): boolean {
    this.skipSpace();
    return !this.fill();
  }
}

/**
 * Finds where one JSON value ends, a chunk at a time: what it has seen carries over between chunks.
 * One per reader, started again for each value (a list has hundreds of thousands of them).
 */
class ValueEnd {
  /** The value ended where the last `scan` stopped. */
  done = false;
  inString = false;
  private kind = SCALAR;
  private depth = 0;
  /** A run of backslashes reaching the end of the previous chunk, inside a string. */
  private backslashes = 0;

  start(kind: number): this {
    this.kind = kind;
    this.inString = kind === STRING;
    this.done = false;
    this.depth = 0;
    this.backslashes = 0;
    return this;
  }

  /** Scans `buf` from `i` (past an opening quote) to where the value ends (`done`) or the chunk does. */
  scan(buf: Buffer, i: number): number {
    if (this.kind === SCALAR) return this.scalarEnd(buf, i);
    while (i < buf.length) {
      if (this.inString) {
        i = this.pastString(buf, i);
        if (!this.inString && this.kind === STRING) return this.stop(i);
        continue;
      }
      const b = buf[i++]!;
      if (b === QUOTE) this.inString = true;
      else if (b === OPEN_BRACE || b === OPEN_BRACKET) this.depth++;
      else if ((b === CLOSE_BRACE || b === CLOSE_BRACKET) && --this.depth === 0) return this.stop(i);
    }
    return i;
  }

  private stop(i: number): number {
    this.done = true;
    return i;
  }

  /** A number, true, false or null ends before the next delimiter or space. */
  private scalarEnd(buf: Buffer, i: number): number {
    while (i < buf.length) {
      const b = buf[i]!;
      if (b === COMMA || b === CLOSE_BRACE || b === CLOSE_BRACKET || isSpace(b)) return this.stop(i);
      i++;
    }
    return i;
  }

  /** From `i` inside a string: past its next quote (leaving the string unless the quote is escaped), or the chunk's end. */
  private pastString(buf: Buffer, i: number): number {
    // Jump to the next quote; it closes the string unless an odd run of backslashes precedes it.
    const quote = buf.indexOf(QUOTE, i);
    const stop = quote === -1 ? buf.length : quote;
    let run = 0;
    while (stop - run - 1 >= i && buf[stop - run - 1] === BACKSLASH) run++;
    const total = run === stop - i ? this.backslashes + run : run;
    if (quote === -1) {
      this.backslashes = total;
      return buf.length;
    }
    this.backslashes = 0;
    if (total % 2 === 0) this.inString = false;
    return quote + 1;
  }
}

function describe(b: number): string {
  if (b === -1) return 'the end of the file';
  return b >= 0x20 && b < 0x7f ? `"${String.fromCharCode(b)}"` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}

/** JSON.parse, throwing JsonStreamError with the element's offset. */
export function parseElement(raw: Buffer, offset: number): unknown {
  return parse(raw.toString('utf8'), offset);
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
 * Streams the envelope in `path`. `onElement(raw, index, offset)` gets the bytes of each element of
 * a top-level `data` array, in order, balanced but not parsed (see `parseElement`).
 */
export function scanEnvelope(path: string, onElement: (raw: Buffer, index: number, offset: number) => void): EnvelopeScan {
  const fd = openSync(path, 'r');
  try {
    const r = new ByteReader(fd);
    r.skipSpace();
    r.expect(OPEN_BRACE, 'an object ("{")');
    r.skipSpace();
    let scan: EnvelopeScan = { members: new Map(), dataArray: false };
    if (r.peek() === CLOSE_BRACE) r.next();
    else scan = scanMembers(r, onElement);
    if (!r.atEnd()) throw new JsonStreamError('unexpected content after the document', r.offset);
    return scan;
  } finally {
    closeSync(fd);
  }
}

/** The envelope's members, through its closing "}". */
function scanMembers(r: ByteReader, onElement: (raw: Buffer, index: number, offset: number) => void): EnvelopeScan {
  const members = new Map<string, unknown>();
  let dataArray = false;
  for (;;) {
    r.skipSpace();
    const key = memberName(r);
    r.skipSpace();
    r.expect(COLON, '":"');
    r.skipSpace();
    if (key === 'data' && r.peek() === OPEN_BRACKET) {
      dataArray = true;
      members.delete('data');
      scanDataArray(r, onElement);
    } else {
      const at = r.offset;
      members.set(key, parse(r.rawValue(), at));
    }
    if (listEnds(r, CLOSE_BRACE, `member ${JSON.stringify(key)}`)) return { members, dataArray };
  }
}

function memberName(r: ByteReader): string {
  const at = r.offset;
  if (r.peek() !== QUOTE) throw new JsonStreamError(`expected a member name, found ${describe(r.peek())}`, at);
  return parse(r.rawValue(), at) as string;
}

/** The `data` array, from its "[" through its "]": each element goes to `onElement` unparsed. */
function scanDataArray(r: ByteReader, onElement: (raw: Buffer, index: number, offset: number) => void): void {
  r.next();
  r.skipSpace();
  if (r.peek() === CLOSE_BRACKET) {
    r.next();
    return;
  }
  for (let index = 0; ; index++) {
    r.skipSpace();
    const at = r.offset;
    onElement(r.rawBytes(), index, at);
    if (listEnds(r, CLOSE_BRACKET, `element ${index}`)) return;
  }
}

/** After `after`: true at `close`, false at ","; anything else is an error. */
function listEnds(r: ByteReader, close: number, after: string): boolean {
  r.skipSpace();
  const sep = r.next();
  if (sep === close) return true;
  if (sep === COMMA) return false;
  throw new JsonStreamError(
    `expected "," or "${String.fromCharCode(close)}" after ${after}, found ${describe(sep)}`,
    r.offset - (sep === -1 ? 0 : 1),
  );
}
