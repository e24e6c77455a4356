/**
 * A manifest's profile lines kept as their bytes: what a watcher holds of the manifest its last
 * cycle wrote, where a map of a million names to a million entry strings (and the list's order of
 * them) was most of its heap. The bytes are the file's own profile section, read back once written,
 * with where each line starts and where its name ends.
 *
 * Rows [0, memberCount) are the creators list's members in list order (ascending names, as the
 * manifest lists them); the rows after them are the other profiles, in ascending names too (the
 * manifest writer sorts them): a name is found by a binary search in each of the two runs.
 */
/** A line is `u<TAB>name<TAB>entry<LF>`: its name starts this far in. */
const NAME_AT = 2;
const PROFILE_LINE = 117,
  TAB = 9,
  NEWLINE = 10;
/** Room a table's memory leaves for the next table's to grow into (profiles come and go). */
export const HEADROOM = 1.125;

/** Where a table's rows are: each line's start, each name's length, each member's length in the list. */
export interface RowColumns {
  readonly lineStarts: Uint32Array;
  /**
   * Names are at most 64 characters (core/layout.ts); a longer one (a manifest edited by hand) fails
   * the check a table is read back with, and the manifest is then read from disk.
   */
  readonly nameLengths: Uint8Array;
  readonly memberLengths: Uint32Array;
}

/** What a table leaves once retired: its memory, for the next table to be read and noted into. */
export interface RetiredTable {
  readonly bytes: Buffer;
  readonly columns: RowColumns;
}

export class EntryTable {
  static readonly EMPTY = new EntryTable(
    Buffer.alloc(0),
    { lineStarts: new Uint32Array(1), nameLengths: new Uint8Array(0), memberLengths: new Uint32Array(0) },
    0,
    false,
  );

  /** Set once its bytes are handed over for another table to use (see `retire`). */
  private retired = false;
  private readonly lineStarts: Uint32Array;
  private readonly nameLengths: Uint8Array;
  /** Each member's byte length in the creators list (its entry's last field). */
  readonly memberLengths: Uint32Array;

  constructor(
    private readonly lines: Buffer,
    /**
     * Its rows: where each line starts in `bytes` (and where a line after the last would: size + 1
     * of them), its name's length, and for members their lengths in the list.
     */
    columns: RowColumns,
    readonly memberCount: number,
    /** Whether any row's entry is PENDING (a file that may be half-way through a commit). */
    readonly anyPending: boolean,
    /**
     * What names these bytes exactly, when known: the digest of the manifest they were read from and
     * where in it (see WrittenDigest: the next manifest's digest is chained from it).
     */
    readonly origin?: string,
    /** The columns of the table retired before this one, for the next table's rows to be noted into. */
    private spareColumns?: RowColumns,
  ) {
    this.lineStarts = columns.lineStarts;
    this.nameLengths = columns.nameLengths;
    this.memberLengths = columns.memberLengths;
  }

  get size(): number {
    return this.nameLengths.length;
  }

  /** The profile lines, `u<TAB>name<TAB>entry<LF>` one after the other. */
  get bytes(): Buffer {
    this.assertLive();
    return this.lines;
  }

  /**
   * Hands its memory over for the next tables to be read and noted into (fresh memory costs page
   * faults on every cycle, a lasting buffer none); the table is unusable from then on. Undefined for
   * a table that owns no memory worth handing over.
   */
  retire(): RetiredTable | undefined {
    if (this.retired || this.lines.length === 0) return undefined;
    this.retired = true;
    const { buffer, byteOffset } = this.lines;
    // The columns are views of a recorder's whole arrays (see EntryTableRecorder.table).
    return {
      bytes: Buffer.from(buffer, byteOffset, buffer.byteLength - byteOffset),
      columns: {
        lineStarts: new Uint32Array(this.lineStarts.buffer),
        nameLengths: new Uint8Array(this.nameLengths.buffer),
        memberLengths: new Uint32Array(this.memberLengths.buffer),
      },
    };
  }

  /** The columns the next table's rows may be noted into (once: the recorder that takes them owns them). */
  takeSpareColumns(): RowColumns | undefined {
    const spare = this.spareColumns;
    this.spareColumns = undefined;
    return spare;
  }

  private assertLive(): void {
    if (this.retired) throw new Error('bug: a manifest table was used after its memory was handed over');
  }

  name(row: number): string {
    const start = this.lineStarts[row]! + NAME_AT;
    return this.bytes.toString('latin1', start, start + this.nameLengths[row]!);
  }

  entry(row: number): string {
    return this.bytes.toString('latin1', this.lineStarts[row]! + NAME_AT + this.nameLengths[row]! + 1, this.lineStarts[row + 1]! - 1);
  }

  /** Where row `row`'s line starts (for `size`, where the last line ends). */
  lineStart(row: number): number {
    return this.lineStarts[row]!;
  }

  /**
   * Rows [from, to) (all members' rows or all others') into `into` from row `at` and member
   * `memberAt`: their line starts moved by `shift`, their names' and members' lengths as they are
   * (where a recorder notes them for the table its section will be read back as).
   */
  placeRows(from: number, to: number, shift: number, into: RowColumns, at: number, memberAt: number): void {
    const { lineStarts, nameLengths, memberLengths } = this;
    for (let row = from, i = at; row < to; row++, i++) into.lineStarts[i] = lineStarts[row]! + shift;
    // Each array its own loop: one loop over both kinds of array is slower for each.
    if (to - from >= SET_FROM) into.nameLengths.set(nameLengths.subarray(from, to), at);
    else for (let row = from, i = at; row < to; row++, i++) into.nameLengths[i] = nameLengths[row]!;
    if (from >= this.memberCount) return;
    if (to - from >= SET_FROM) into.memberLengths.set(memberLengths.subarray(from, to), memberAt);
    else for (let row = from, i = memberAt; row < to; row++, i++) into.memberLengths[i] = memberLengths[row]!;
  }

  /** The row of `name`, or -1. */
  find(name: string): number {
    const member = this.firstNotBefore(name, 0, this.memberCount);
    if (member < this.memberCount && this.compareName(member, name) === 0) return member;
    const other = this.firstNotBefore(name, this.memberCount, this.size);
    return other < this.size && this.compareName(other, name) === 0 ? other : -1;
  }

  /** The first row in [low, high) whose name is not before `name` (high: none). */
  firstNotBefore(name: string, low: number, high: number): number {
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.compareName(middle, name) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Row `row`'s name against `name`, in code-unit order (names are ASCII). */
  compareName(row: number, name: string): number {
    const bytes = this.bytes; // (asserts the table is live)
    const start = this.lineStarts[row]! + NAME_AT;
    const length = this.nameLengths[row]!;
    const common = Math.min(length, name.length);
    for (let i = 0; i < common; i++) {
      const difference = bytes[start + i]! - name.charCodeAt(i);
      if (difference !== 0) return difference;
    }
    return length - name.length;
  }
}

/**
 * Runs from this many rows on are copied by TypedArray.set: a changing cycle copies thousands of
 * short runs, and a view of each for set cost more than copying element by element; a quiet one
 * copies a few long runs, which set copies many times faster.
 */
const SET_FROM = 256;

/**
 * Records where each profile line of a manifest being written lands, so that the section can be read
 * back as an EntryTable once the file is complete. Offsets are from the section's first byte.
 */
export class EntryTableRecorder {
  private readonly columns: RowColumns;
  private rows = 0;
  private members = 0;
  private end = 0;
  private pending = false;

  /** Rows go into `spare` (a retired table's columns) when it has room for them. */
  constructor(capacity: number, memberCapacity: number, spare?: RowColumns) {
    const fits = spare !== undefined && spare.nameLengths.length >= capacity && spare.memberLengths.length >= memberCapacity;
    const room = (count: number) => Math.ceil(count * HEADROOM);
    this.columns = fits
      ? spare
      : {
          lineStarts: new Uint32Array(room(capacity) + 1),
          nameLengths: new Uint8Array(room(capacity)),
          memberLengths: new Uint32Array(room(memberCapacity)),
        };
  }

  get bytes(): number {
    return this.end;
  }

  /**
   * A line written as `u<TAB>name<TAB>entry<LF>`, its entry `entryLength` bytes; `listLength` for a
   * member; `pending` for an entry that is PENDING.
   */
  line(name: string, entryLength: number, listLength: number | undefined, pending: boolean): void {
    const { columns } = this;
    if (listLength !== undefined) columns.memberLengths[this.members++] = listLength;
    columns.lineStarts[this.rows] = this.end;
    columns.nameLengths[this.rows++] = name.length;
    this.end += NAME_AT + name.length + 1 + entryLength + 1;
    this.pending ||= pending;
  }

  /** Rows [from, to) of `table`, copied as they are: all members' rows or all others'. */
  rowsOf(table: EntryTable, from: number, to: number): void {
    table.placeRows(from, to, this.end - table.lineStart(from), this.columns, this.rows, this.members);
    this.rows += to - from;
    if (from < table.memberCount) this.members += to - from;
    this.end += table.lineStart(to) - table.lineStart(from);
    this.pending ||= table.anyPending;
  }

  /**
   * The table over `bytes`, the section as written, read back; its member rows are the members
   * recorded. Undefined when the bytes are not lines where the recorder placed them (the file changed).
   */
  table(bytes: Buffer, origin?: string, spare?: RowColumns): EntryTable | undefined {
    const { rows } = this;
    const { lineStarts, nameLengths, memberLengths } = this.columns;
    if (bytes.length !== this.end) return undefined;
    lineStarts[rows] = this.end;
    for (let row = 0; row < rows; row++) {
      const start = lineStarts[row]!;
      if (
        bytes[start] !== PROFILE_LINE ||
        bytes[start + NAME_AT + nameLengths[row]!] !== TAB ||
        bytes[lineStarts[row + 1]! - 1] !== NEWLINE
      )
        return undefined;
    }
    const columns = {
      lineStarts: lineStarts.subarray(0, rows + 1),
      nameLengths: nameLengths.subarray(0, rows),
      memberLengths: memberLengths.subarray(0, this.members),
    };
    return new EntryTable(bytes, columns, this.members, this.pending, origin, spare);
  }
}
