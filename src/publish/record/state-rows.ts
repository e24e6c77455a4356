/**
 * A state's profiles, read from its gzip as they are walked, a member at a time: what a publish
 * holds of the bucket's million profiles is the gzip it read, not the text inflated whole with
 * three offsets per row beside it. The writer makes members of about a megabyte of lines
 * (format.ts); a line may straddle two, so the end of one member's text is carried into the next.
 *
 * The state is read through once when it is parsed: damage is found then (each member's CRC and
 * length, as gunzip checks them), and the rows are counted and their order checked. A walk later
 * reads the same bytes, so it cannot fail.
 */
import { crc32, inflateRawSync } from 'node:zlib';
import { compareRanges, grow, ProfileTable, tableOf, type RowCursor, type RowSource } from '../plan/profile-table.js';

const TAB = 9;
const NEWLINE = 10;
const PROFILE_LINE = 112; /* p */
const FILE_LINE = 102; /* f */

/** A member's text is inflated into one buffer of this size when it fits: the writer's members hold a megabyte of lines. */
const MEMBER_ROOM = (1 << 20) + 1;

/** gzip's member header (RFC 1952): its magic, the deflate method, and the flags of optional fields. */
const GZIP_MAGIC = [0x1f, 0x8b, 8];
const GZIP_HEADER_BYTES = 10;
const GZIP_TRAILER_BYTES = 8;
const [FHCRC, FEXTRA, FNAME, FCOMMENT] = [2, 4, 8, 16];

export class StateDamaged extends Error {
  constructor() {
    super('the remote state is damaged: its gzip does not inflate');
    this.name = 'StateDamaged';
  }
}

export class StateRows implements RowSource {
  private constructor(
    private readonly gzip: Uint8Array,
    readonly size: number,
    readonly rowsByteLength: number,
  ) {}

  /**
   * The state's profiles from its gzip (a whole state, its header line first), each file line
   * handed to `onFile`. A state of profiles out of name order (an older version's) is sorted into
   * a table in memory. Throws StateDamaged.
   */
  static read(gzip: Uint8Array, onFile: (path: string, hash: string) => void): RowSource {
    let size = 0,
      rowsByteLength = 0,
      inOrder = true,
      last = Buffer.alloc(0);
    for (const table of profileTables(gzip, onFile)) {
      if (table.size === 0) continue;
      if (size > 0 && compareRanges(last, 0, last.length, table.bytes, table.startOf(0), table.tabOf(0)) >= 0) inOrder = false;
      for (let row = 0; row < table.size; row++) {
        if (row > 0 && table.compareNames(row - 1, table, row) >= 0) inOrder = false;
        rowsByteLength += table.endOf(row) - table.startOf(row);
      }
      size += table.size;
      last = Buffer.from(table.bytes.subarray(table.startOf(table.size - 1), table.tabOf(table.size - 1)));
    }
    const rows = new StateRows(gzip, size, rowsByteLength);
    return inOrder ? rows : tableOf(rows);
  }

  get byteLength(): number {
    return this.gzip.length;
  }

  rows(): RowCursor {
    return new StateCursor(profileTables(this.gzip));
  }
}

class StateCursor implements RowCursor {
  table = ProfileTable.EMPTY;
  row = -1;

  constructor(private readonly tables: Iterator<ProfileTable>) {}

  next(): boolean {
    while (++this.row >= this.table.size) {
      const next = this.tables.next();
      if (next.done === true) return false;
      this.table = next.value;
      this.row = -1;
    }
    return true;
  }
}

/**
 * The profile lines of each piece of the text, as a table over that piece: its offsets are
 * reused from one piece to the next, so each table is valid until the next is made.
 */
function* profileTables(gzip: Uint8Array, onFile?: (path: string, hash: string) => void): Generator<ProfileTable> {
  const rows = new PieceRows();
  for (const text of linePieces(gzip)) yield rows.of(text, onFile);
}

/** Offsets of a piece's profile rows, grown to the longest piece and reused. */
class PieceRows {
  private starts = new Uint32Array(1 << 15);
  private tabs = new Uint32Array(1 << 15);
  private ends = new Uint32Array(1 << 15);

  /**
   * Each `kind<TAB>key<TAB>hash[<TAB>more]<NEWLINE>` of `text` (whole lines), in one pass over its
   * bytes with no call per line: profile lines as rows, file lines to `onFile`. Lines of another
   * shape are passed over.
   */
  of(text: Buffer, onFile?: (path: string, hash: string) => void): ProfileTable {
    let size = 0,
      start = 0,
      tabs = 0,
      first = -1,
      second = -1,
      third = -1;
    for (let at = 0; at < text.length; at++) {
      const byte = text[at];
      if (byte === TAB) {
        if (tabs === 0) first = at;
        else if (tabs === 1) second = at;
        else if (tabs === 2) third = at;
        tabs++;
      } else if (byte === NEWLINE) {
        if (tabs >= 2 && first === start + 1) {
          const hashEnd = tabs > 2 ? third : at;
          if (text[start] === PROFILE_LINE) {
            if (size === this.starts.length) this.grow();
            this.starts[size] = first + 1;
            this.tabs[size] = second;
            this.ends[size++] = hashEnd;
          } else if (text[start] === FILE_LINE)
            onFile?.(text.toString('utf8', first + 1, second), text.toString('utf8', second + 1, hashEnd));
        }
        start = at + 1;
        tabs = 0;
      }
    }
    return ProfileTable.view(text, this.starts.subarray(0, size), this.tabs.subarray(0, size), this.ends.subarray(0, size), size);
  }

  private grow(): void {
    this.starts = grow(this.starts);
    this.tabs = grow(this.tabs);
    this.ends = grow(this.ends);
  }
}

/**
 * The text below the header line, in pieces of whole lines, each ending with a newline: each
 * member's lines, and apart (copied, a line's bytes) the line begun in the member before. A
 * member's text is let go of once the walk has moved past its piece.
 */
function* linePieces(gzip: Uint8Array): Generator<Buffer> {
  let carried = Buffer.alloc(0);
  let header = true;
  for (const text of memberTexts(gzip)) {
    const first = text.indexOf(NEWLINE);
    if (first === -1) {
      carried = Buffer.concat([carried, text]); // a line longer than a member
      letGo(text);
      continue;
    }
    const straddling = Buffer.concat([carried, text.subarray(0, first + 1)]);
    if (!header) yield straddling;
    header = false;
    const last = text.lastIndexOf(NEWLINE);
    if (last > first) yield text.subarray(first + 1, last + 1);
    carried = Buffer.from(text.subarray(last + 1));
    letGo(text);
  }
  if (!header && carried.length > 0) yield Buffer.concat([carried, Buffer.of(NEWLINE)]);
}

/**
 * Hands a member's text back at once, its buffer detached, rather than when a collection finds it:
 * left to the collector, a walk's megabyte buffers piled up by tens before one came. Never a
 * buffer of Node's pool (Buffer.poolSize bytes), which smaller buffers share.
 */
function letGo(text: Buffer): void {
  if (text.buffer.byteLength > Buffer.poolSize) (text.buffer as ArrayBuffer).transfer(0);
}

/** Each gzip member's text, checked as gunzip checks it (its CRC and length). */
function* memberTexts(gzip: Uint8Array): Generator<Buffer> {
  const view = new DataView(gzip.buffer, gzip.byteOffset, gzip.byteLength);
  for (let at = 0; at < gzip.length;) {
    const start = deflateStart(gzip, at);
    let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
    try {
      // `info`: how many bytes the member's deflate took, so the next member is found after its trailer.
      inflated = inflateRawSync(gzip.subarray(start), { info: true, chunkSize: MEMBER_ROOM }) as unknown as typeof inflated;
    } catch {
      throw new StateDamaged();
    }
    const text = inflated.buffer;
    const trailer = start + inflated.engine.bytesWritten;
    if (trailer + GZIP_TRAILER_BYTES > gzip.length) throw new StateDamaged();
    if (view.getUint32(trailer, true) !== crc32(text) || view.getUint32(trailer + 4, true) !== text.length % 2 ** 32)
      throw new StateDamaged();
    yield text;
    at = trailer + GZIP_TRAILER_BYTES;
  }
}

/** Where the deflate data of the member at `at` starts, past its header and optional fields. */
function deflateStart(gzip: Uint8Array, at: number): number {
  if (GZIP_MAGIC.some((byte, k) => gzip[at + k] !== byte)) throw new StateDamaged();
  const flags = gzip[at + 3]!;
  let start = at + GZIP_HEADER_BYTES;
  if (flags & FEXTRA) start += 2 + (gzip[start]! | (gzip[start + 1]! << 8));
  for (const field of [FNAME, FCOMMENT]) if (flags & field) start = gzip.indexOf(0, start) + 1;
  if (flags & FHCRC) start += 2;
  if (start <= at || start > gzip.length) throw new StateDamaged();
  return start;
}
