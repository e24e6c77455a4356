/**
 * Profiles and their data hashes, sorted by name, packed in one buffer: what a publish holds of the
 * tree (its manifest), at a million profiles, instead of a map of a million strings. What is live
 * is a table too, or rows read from the state's gzip a member at a time (../record/state-rows.ts):
 * both are walked in name order by a cursor, compared as sorted streams, a merge (plan.ts), and a
 * state is written from them line by line (../record/format.ts).
 *
 * Each row is `name<TAB>hash` somewhere in `bytes` (ASCII: names and hashes are, by the store's
 * rules and ours); three arrays say where its name starts, where its tab is and where its hash ends,
 * so a table can be a view of the bytes it was parsed from (a state's lines) with no copy.
 */

const TAB = 9;

export class ProfileTable implements RowSource {
  private constructor(
    readonly bytes: Buffer,
    private readonly starts: Uint32Array,
    private readonly tabs: Uint32Array,
    private readonly ends: Uint32Array,
    readonly size: number,
  ) {}

  static readonly EMPTY = new ProfileTable(Buffer.alloc(0), new Uint32Array(0), new Uint32Array(0), new Uint32Array(0), 0);

  /** A table of these rows, in any order (the last of a name wins). */
  static of(rows: Iterable<readonly [string, string]>): ProfileTable {
    const builder = new TableBuilder();
    for (const [name, hash] of rows) builder.add(name, hash);
    return builder.build();
  }

  /** @internal (TableBuilder, and a state's tables over each piece of its text) */
  static view(bytes: Buffer, starts: Uint32Array, tabs: Uint32Array, ends: Uint32Array, size: number): ProfileTable {
    return new ProfileTable(bytes, starts, tabs, ends, size);
  }

  /** The bytes of every row's `name<TAB>hash`. */
  get rowsByteLength(): number {
    let bytes = 0;
    for (let row = 0; row < this.size; row++) bytes += this.ends[row]! - this.starts[row]!;
    return bytes;
  }

  /** The memory the table holds: its bytes, and three offsets per row. */
  get byteLength(): number {
    return this.bytes.length + this.size * 3 * Uint32Array.BYTES_PER_ELEMENT;
  }

  name(row: number): string {
    return this.bytes.toString('latin1', this.starts[row]!, this.tabs[row]!);
  }

  hash(row: number): string {
    return this.bytes.toString('latin1', this.tabs[row]! + 1, this.ends[row]!);
  }

  /** The row's `name<TAB>hash`, as bytes (no copy). */
  rowBytes(row: number): Buffer {
    return this.bytes.subarray(this.starts[row]!, this.ends[row]!);
  }

  /** Where the row is in `bytes`: its start, its tab, its end. */
  startOf(row: number): number {
    return this.starts[row]!;
  }
  tabOf(row: number): number {
    return this.tabs[row]!;
  }
  endOf(row: number): number {
    return this.ends[row]!;
  }

  rows(): RowCursor {
    return new TableCursor(this);
  }

  /** This table's row `row` against `other`'s row `at`, by name. */
  compareNames(row: number, other: ProfileTable, at: number): number {
    return compareRanges(this.bytes, this.starts[row]!, this.tabs[row]!, other.bytes, other.starts[at]!, other.tabs[at]!);
  }

  /** Whether the two rows (of names equal) hold the same hash. */
  sameHash(row: number, other: ProfileTable, at: number): boolean {
    return compareRanges(this.bytes, this.tabs[row]! + 1, this.ends[row]!, other.bytes, other.tabs[at]! + 1, other.ends[at]!) === 0;
  }

  /** Whether the row's hash is `hash`. */
  hashIs(row: number, hash: string): boolean {
    const from = this.tabs[row]! + 1;
    return this.ends[row]! - from === hash.length && this.bytes.toString('latin1', from, this.ends[row]!) === hash;
  }

  /** The row of `name` at `from` or after, or -1 (a binary search). */
  rowOf(name: string, from = 0): number {
    const key = Buffer.from(name, 'latin1');
    let low = from,
      high = this.size - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const order = compareRanges(this.bytes, this.starts[middle]!, this.tabs[middle]!, key, 0, key.length);
      if (order === 0) return middle;
      if (order < 0) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  has(name: string): boolean {
    return this.rowOf(name) !== -1;
  }

  get(name: string): string | undefined {
    const row = this.rowOf(name);
    return row === -1 ? undefined : this.hash(row);
  }

  *keys(): IterableIterator<string> {
    for (let row = 0; row < this.size; row++) yield this.name(row);
  }

  *[Symbol.iterator](): IterableIterator<[string, string]> {
    for (let row = 0; row < this.size; row++) yield [this.name(row), this.hash(row)];
  }
}

/** A table's rows, one after the other. */
class TableCursor implements RowCursor {
  row = -1;
  constructor(readonly table: ProfileTable) {}

  next(): boolean {
    return ++this.row < this.table.size;
  }
}

/**
 * Some rows of one table, in the order they were picked: the plan's profiles as row numbers, where a
 * string each was a million strings on a first publish. Names are made only when asked for.
 */
export class PickedRows implements Iterable<string> {
  private rows = new Uint32Array(1024);
  private count = 0;

  constructor(private readonly table: ProfileTable) {}

  get length(): number {
    return this.count;
  }

  push(row: number): void {
    if (this.count === this.rows.length) this.rows = grow(this.rows);
    this.rows[this.count++] = row;
  }

  /** The table's row of the `index`th pick. */
  row(index: number): number {
    return this.rows[index]!;
  }

  name(index: number): string {
    return this.table.name(this.rows[index]!);
  }

  /** The names of the picks from `from` to before `to`, as strings (a chunk's worth at a time). */
  names(from = 0, to = this.count): string[] {
    const names: string[] = [];
    const end = Math.min(to, this.count);
    for (let index = from; index < end; index++) names.push(this.name(index));
    return names;
  }

  *[Symbol.iterator](): IterableIterator<string> {
    for (let index = 0; index < this.count; index++) yield this.name(index);
  }
}

/** Rows in name order, walked from the first each time: a table, a state's gzip, or two merged. */
export interface RowSource {
  readonly size: number;
  /** The bytes of every row's `name<TAB>hash`, for a writer to ask for its room once. */
  readonly rowsByteLength: number;
  /** The memory the source holds. */
  readonly byteLength: number;
  rows(): RowCursor;
}

/**
 * A walk over a source's rows. `next` moves to the next row (call it once before the first) and
 * says whether there is one; the row is `table`'s `row`, valid until the next call: a state's
 * tables hold one member's rows at a time.
 */
export interface RowCursor {
  readonly table: ProfileTable;
  readonly row: number;
  next(): boolean;
}

export function forEachRow(source: RowSource, visit: (table: ProfileTable, row: number) => void): void {
  for (const rows = source.rows(); rows.next();) visit(rows.table, rows.row);
}

/** Every row of both sources, in name order; where both have a name, `over`'s row wins. Made as it is read, never held. */
export function union(base: RowSource, over: RowSource): RowSource {
  if (over.size === 0) return base;
  if (base.size === 0) return over;
  return new Union(base, over);
}

class Union implements RowSource {
  private counted: { size: number; rowsByteLength: number } | undefined;

  constructor(
    private readonly base: RowSource,
    private readonly over: RowSource,
  ) {}

  get size(): number {
    return this.count().size;
  }

  get rowsByteLength(): number {
    return this.count().rowsByteLength;
  }

  get byteLength(): number {
    return this.base.byteLength + this.over.byteLength;
  }

  rows(): RowCursor {
    return new UnionCursor(this.base.rows(), this.over.rows());
  }

  /** Counted by a walk, once and only when asked: a state's rows are inflated to be counted. */
  private count(): { size: number; rowsByteLength: number } {
    if (this.counted !== undefined) return this.counted;
    let size = 0,
      rowsByteLength = 0;
    forEachRow(this, (table, row) => {
      size++;
      rowsByteLength += table.endOf(row) - table.startOf(row);
    });
    return (this.counted = { size, rowsByteLength });
  }
}

/**
 * Two cursors merged. Each side moves on only at the next call, after its row was read: moving it
 * at once would let a state's cursor replace the table the row is in.
 */
class UnionCursor implements RowCursor {
  table = ProfileTable.EMPTY;
  row = -1;
  private hasBase = true;
  private hasOver = true;
  private moveBase = true;
  private moveOver = true;

  constructor(
    private readonly base: RowCursor,
    private readonly over: RowCursor,
  ) {}

  next(): boolean {
    if (this.moveBase) this.hasBase = this.base.next();
    if (this.moveOver) this.hasOver = this.over.next();
    if (!this.hasBase && !this.hasOver) return (this.moveBase = this.moveOver = false);
    const order = !this.hasBase ? 1 : !this.hasOver ? -1 : this.base.table.compareNames(this.base.row, this.over.table, this.over.row);
    const from = order < 0 ? this.base : this.over;
    this.table = from.table;
    this.row = from.row;
    this.moveBase = order <= 0;
    this.moveOver = order >= 0;
    return true;
  }
}

/** The rows of `source` as a table of their own. */
export function tableOf(source: RowSource): ProfileTable {
  if (source instanceof ProfileTable) return source;
  const rows = new TableBuilder();
  forEachRow(source, (table, row) => rows.addRow(table, row));
  return rows.build();
}

/** What a merge of two sorted sources calls for each name: in the left only, the right only, or both. A row is valid during the call. */
export interface MergeVisitor {
  left(table: ProfileTable, row: number): void;
  right(table: ProfileTable, row: number): void;
  both(left: ProfileTable, leftRow: number, right: ProfileTable, rightRow: number): void;
}

/** Walks two sources side by side in name order, as `comm` does. */
export function mergeRows(left: RowSource, right: RowSource, visit: MergeVisitor): void {
  const a = left.rows(),
    b = right.rows();
  let hasA = a.next(),
    hasB = b.next();
  while (hasA && hasB) {
    const order = a.table.compareNames(a.row, b.table, b.row);
    if (order < 0) {
      visit.left(a.table, a.row);
      hasA = a.next();
    } else if (order > 0) {
      visit.right(b.table, b.row);
      hasB = b.next();
    } else {
      visit.both(a.table, a.row, b.table, b.row);
      hasA = a.next();
      hasB = b.next();
    }
  }
  for (; hasA; hasA = a.next()) visit.left(a.table, a.row);
  for (; hasB; hasB = b.next()) visit.right(b.table, b.row);
}

/** Byte order of two ranges (for ASCII, the order of the strings). */
export function compareRanges(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): number {
  const aLength = aEnd - aStart,
    bLength = bEnd - bStart;
  const common = Math.min(aLength, bLength);
  for (let k = 0; k < common; k++) {
    const difference = a[aStart + k]! - b[bStart + k]!;
    if (difference !== 0) return difference;
  }
  return aLength - bLength;
}

/**
 * Rows added in any order, copied into a buffer of its own or (`over`) found in place in bytes the
 * caller already holds. Sorted when built, unless they came in order: the manifest's list members
 * and a state this version wrote do.
 */
export class TableBuilder {
  private bytes: Buffer;
  private starts: Uint32Array;
  private tabs: Uint32Array;
  private ends: Uint32Array;
  private size = 0;
  private used = 0;
  private inOrder = true;

  /**
   * With `over`, rows are ranges of those bytes (addRange), not copies. `room`: as many rows and
   * bytes as the table may hold, when the caller knows from a file's size. Asked for at once, they
   * need no growing, where each doubling held the old copy beside the new one and left it to the
   * collector; room never filled is never touched, so it never becomes resident.
   */
  constructor(
    private readonly over?: Buffer,
    room: { rows: number; bytes: number } = { rows: 1024, bytes: 64 * 1024 },
  ) {
    this.bytes = over ?? Buffer.allocUnsafe(Math.max(1024, room.bytes));
    const rows = Math.max(1024, Math.ceil(room.rows));
    this.starts = new Uint32Array(rows);
    this.tabs = new Uint32Array(rows);
    this.ends = new Uint32Array(rows);
  }

  add(name: string, hash: string): void {
    const start = this.reserve(name.length + 1 + hash.length);
    this.bytes.write(name, start, 'latin1');
    this.bytes[start + name.length] = TAB;
    this.bytes.write(hash, start + name.length + 1, 'latin1');
    this.push(start, start + name.length, start + name.length + 1 + hash.length);
  }

  /** A row of `name<TAB>hash` found in `source` (copied, unless it is the bytes the builder is over). */
  addBytes(source: Uint8Array, start: number, tab: number, end: number): void {
    if (source === this.over) return this.push(start, tab, end);
    const at = this.reserve(end - start);
    this.bytes.set(source.subarray(start, end), at);
    this.push(at, at + tab - start, at + end - start);
  }

  addRow(table: ProfileTable, row: number): void {
    this.addBytes(table.bytes, table.startOf(row), table.tabOf(row), table.endOf(row));
  }

  build(): ProfileTable {
    const { starts, tabs, ends, size } = this;
    const bytes = this.over ?? this.bytes.subarray(0, this.used);
    // Views, not copies: rows added later go past `size`, and a grown array is a new one.
    if (this.inOrder) return ProfileTable.view(bytes, starts.subarray(0, size), tabs.subarray(0, size), ends.subarray(0, size), size);
    const order = sortedRows(bytes, starts, tabs, size);
    const kept = new Uint32Array(order.length);
    let count = 0;
    for (let k = 0; k < order.length; k++) {
      const row = order[k]!;
      // Equal names sort by the order they came in: the last one wins.
      const next = order[k + 1];
      if (next !== undefined && compareRanges(bytes, starts[row]!, tabs[row]!, bytes, starts[next]!, tabs[next]!) === 0) continue;
      kept[count++] = row;
    }
    // A loop, not Uint32Array.from(rows, map), which lists every value on the heap first.
    const pick = (from: Uint32Array) => {
      const picked = new Uint32Array(count);
      for (let k = 0; k < count; k++) picked[k] = from[kept[k]!]!;
      return picked;
    };
    return ProfileTable.view(bytes, pick(starts), pick(tabs), pick(ends), count);
  }

  private reserve(length: number): number {
    if (this.used + length > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.used + length));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    const at = this.used;
    this.used += length;
    return at;
  }

  private push(start: number, tab: number, end: number): void {
    if (this.size === this.starts.length) {
      this.starts = grow(this.starts);
      this.tabs = grow(this.tabs);
      this.ends = grow(this.ends);
    }
    const bytes = this.over ?? this.bytes;
    const last = this.size - 1;
    if (this.inOrder && last >= 0 && compareRanges(bytes, this.starts[last]!, this.tabs[last]!, bytes, start, tab) >= 0)
      this.inOrder = false;
    this.starts[this.size] = start;
    this.tabs[this.size] = tab;
    this.ends[this.size] = end;
    this.size++;
  }
}

export function grow(array: Uint32Array): Uint32Array<ArrayBuffer> {
  const grown = new Uint32Array(array.length * 2);
  grown.set(array);
  return grown;
}

/** The rows' numbers in name order, equal names in the order they came. */
function sortedRows(bytes: Buffer, starts: Uint32Array, tabs: Uint32Array, size: number): Uint32Array {
  const order = new Uint32Array(size);
  for (let row = 0; row < size; row++) order[row] = row;
  return order.sort((a, b) => compareRanges(bytes, starts[a]!, tabs[a]!, bytes, starts[b]!, tabs[b]!) || a - b);
}
