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

export class EntryTable {
  static readonly EMPTY = new EntryTable(Buffer.alloc(0), new Uint32Array(1), new Uint32Array(0), 0, new Uint32Array(0), false);

  /** Set once its bytes are handed over for another table to use (see `retire`). */
  private retired = false;

  constructor(
    private readonly lines: Buffer,
    /** Where each row's line starts in `bytes`, and where a line after the last would (size + 1 of them). */
    private readonly lineStarts: Uint32Array,
    /** Where each row's name ends (the tab before its entry). */
    private readonly tabs: Uint32Array,
    readonly memberCount: number,
    /** Each member's byte length in the creators list (its entry's last field). */
    readonly memberLengths: Uint32Array,
    /** Whether any row's entry is PENDING (a file that may be half-way through a commit). */
    readonly anyPending: boolean,
    /**
     * What names these bytes exactly, when known: the digest of the manifest they were read from and
     * where in it (see WrittenDigest: the next manifest's digest is chained from it).
     */
    readonly origin?: string,
  ) {}

  get size(): number {
    return this.tabs.length;
  }

  /** The profile lines, `u<TAB>name<TAB>entry<LF>` one after the other. */
  get bytes(): Buffer {
    this.assertLive();
    return this.lines;
  }

  /**
   * Hands the memory of its bytes over for the next table to be read into (fresh memory costs page
   * faults on every cycle, a lasting buffer none); the table is unusable from then on. Undefined for
   * a table that owns no memory worth handing over.
   */
  retire(): Buffer | undefined {
    if (this.retired || this.lines.length === 0) return undefined;
    this.retired = true;
    const { buffer, byteOffset } = this.lines;
    return Buffer.from(buffer, byteOffset, buffer.byteLength - byteOffset);
  }

  private assertLive(): void {
    if (this.retired) throw new Error('bug: a manifest table was used after its memory was handed over');
  }

  name(row: number): string {
    return this.bytes.toString('latin1', this.lineStarts[row]! + NAME_AT, this.tabs[row]!);
  }

  entry(row: number): string {
    return this.bytes.toString('latin1', this.tabs[row]! + 1, this.lineStarts[row + 1]! - 1);
  }

  /** Where row `row`'s line starts (for `size`, where the last line ends). */
  lineStart(row: number): number {
    return this.lineStarts[row]!;
  }

  /** Where row `row`'s name ends, as an offset from its line's start. */
  nameEnd(row: number): number {
    return this.tabs[row]! - this.lineStarts[row]!;
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
    const length = this.tabs[row]! - start;
    const common = Math.min(length, name.length);
    for (let i = 0; i < common; i++) {
      const difference = bytes[start + i]! - name.charCodeAt(i);
      if (difference !== 0) return difference;
    }
    return length - name.length;
  }
}

/**
 * Records where each profile line of a manifest being written lands, so that the section can be read
 * back as an EntryTable once the file is complete. Offsets are from the section's first byte.
 */
export class EntryTableRecorder {
  private readonly lineStarts: Uint32Array;
  private readonly tabs: Uint32Array;
  private readonly memberLengths: Uint32Array;
  private rows = 0;
  private members = 0;
  private end = 0;
  private pending = false;

  constructor(capacity: number, memberCapacity: number) {
    this.lineStarts = new Uint32Array(capacity + 1);
    this.tabs = new Uint32Array(capacity);
    this.memberLengths = new Uint32Array(memberCapacity);
  }

  get bytes(): number {
    return this.end;
  }

  /** A line written as `u<TAB>name<TAB>entry<LF>`; `listLength` for a member; `pending` for an entry that is PENDING. */
  line(name: string, entry: string, listLength: number | undefined, pending: boolean): void {
    if (listLength !== undefined) this.memberLengths[this.members++] = listLength;
    this.lineStarts[this.rows] = this.end;
    this.tabs[this.rows++] = this.end + NAME_AT + name.length;
    this.end += NAME_AT + name.length + 1 + entry.length + 1;
    this.pending ||= pending;
  }

  /** Rows [from, to) of `table`, copied as they are: all members' rows or all others'. */
  rowsOf(table: EntryTable, from: number, to: number): void {
    const members = from < table.memberCount;
    const shift = this.end - table.lineStart(from);
    for (let row = from; row < to; row++) {
      this.lineStarts[this.rows] = table.lineStart(row) + shift;
      this.tabs[this.rows++] = table.lineStart(row) + shift + table.nameEnd(row);
      if (members) this.memberLengths[this.members++] = table.memberLengths[row]!;
    }
    this.end += table.lineStart(to) - table.lineStart(from);
    this.pending ||= table.anyPending;
  }

  /**
   * The table over `bytes`, the section as written, read back; its member rows are the members
   * recorded. Undefined when the bytes are not lines where the recorder placed them (the file changed).
   */
  table(bytes: Buffer, origin?: string): EntryTable | undefined {
    const { lineStarts, tabs, rows } = this;
    if (bytes.length !== this.end) return undefined;
    lineStarts[rows] = this.end;
    for (let row = 0; row < rows; row++) {
      if (bytes[lineStarts[row]!] !== PROFILE_LINE || bytes[tabs[row]!] !== TAB || bytes[lineStarts[row + 1]! - 1] !== NEWLINE)
        return undefined;
    }
    return new EntryTable(
      bytes,
      lineStarts.subarray(0, rows + 1),
      tabs.subarray(0, rows),
      this.members,
      this.memberLengths.subarray(0, this.members),
      this.pending,
      origin,
    );
  }
}
