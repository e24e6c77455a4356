/**
 * The creators list's members in list order, as the manifest records them. Their names and entries
 * are columns: an array, or a view that reads them out of where they already are (an EntryTable's
 * rows, or the last list's members and this build's own in list order), so that a list of a
 * million members is not a million strings.
 */
import type { EntryTable } from './entry-table.js';

export interface ListOrder {
  names: Column<string>;
  lengths: ArrayLike<number>;
  /**
   * Each member's manifest entry where known (undefined where not): at a million members, a lookup
   * by name for each one costs more than the rest of a quiet watch cycle's bookkeeping.
   */
  entries?: Column<string | undefined>;
  /**
   * With `table`: member i's row there when that row's line is the one to write for it (the member
   * was carried over unchanged), else -1; without, member i is row i (the list read back with the
   * table). The manifest writer copies such rows in runs, found by a scan of this column.
   */
  tableRows?: Int32Array;
  table?: EntryTable;
  /**
   * Each member's data hash, FINGERPRINT_LENGTH bytes one after the other, when this process made
   * the list: the next list copies its unchanged members' hashes from here in runs.
   */
  hashes?: Buffer;
  /**
   * A whole list's piece marks in its gzip variant (creators-gzip.ts), when this process made the
   * list: the next list takes its carried members' marks from here.
   */
  pieceMarks?: Uint8Array;
  /**
   * This list's number among those this process made: the gzip variant's pieces cut from it are
   * known by it (creators-gzip.ts CarriedPieces).
   */
  made?: number;
}

/** A list's members as read or ordered, before any hashes are attached. */
export type ListMembers = Required<Pick<ListOrder, 'names' | 'lengths' | 'entries'>> & Pick<ListOrder, 'tableRows' | 'table'>;

export interface Column<T> {
  readonly length: number;
  at(index: number): T | undefined;
  /** Whether every member's value is known (an array may have holes; a table's rows have none). */
  readonly complete?: boolean;
}

/** Member i's name or entry from row i of a table (its member rows are the list, in order). */
export class TableColumn implements Column<string> {
  readonly complete = true;

  constructor(
    private readonly table: EntryTable,
    private readonly part: 'name' | 'entry',
    readonly length: number,
  ) {}

  at(index: number): string | undefined {
    if (index < 0 || index >= this.length) return undefined;
    return this.part === 'name' ? this.table.name(index) : this.table.entry(index);
  }
}

/**
 * A list made of the last list's members and this build's own: `order[i]` is ~j for the last list's
 * member j, or k for this build's member k (see CreatorsList.listOrder). Built with `of`, it is never
 * more than one level deep: a watcher composes each cycle's list over the last one, and while no
 * cycle writes the manifest (whose table starts the next list afresh), levels would pile up, each
 * holding an order of every member and making every lookup walk them all.
 */
export class ComposedColumn<T> implements Column<T> {
  private constructor(
    private readonly order: ArrayLike<number>,
    private readonly last: Column<T> | undefined,
    private readonly own: ArrayLike<T | undefined> | undefined,
  ) {}

  /** The column `order` makes of `last` and `own`, a composed `last` looked through to what it was made of. */
  static of<T>(order: ArrayLike<number>, last: Column<T> | undefined, own: ArrayLike<T | undefined> | undefined): ComposedColumn<T> {
    if (!(last instanceof ComposedColumn)) return new ComposedColumn(order, last, own);
    const inner: ComposedColumn<T> = last;
    const flat = new Int32Array(order.length);
    const values: (T | undefined)[] = [];
    for (let index = 0; index < order.length; index++) {
      const i = order[index]!;
      const j = i < 0 ? inner.order[~i]! : undefined;
      if (j !== undefined && j < 0) flat[index] = j;
      else flat[index] = values.push(j === undefined ? own?.[i] : inner.own?.[j]) - 1;
    }
    return new ComposedColumn(flat, inner.last, values);
  }

  get length(): number {
    return this.order.length;
  }

  /** Whether every member's value is known: the last list's all are, and so is each of this build's own. */
  get complete(): boolean {
    for (let index = 0; index < this.order.length; index++) {
      const i = this.order[index]!;
      if (i < 0 ? this.last?.complete !== true : this.own?.[i] === undefined) return false;
    }
    return true;
  }

  at(index: number): T | undefined {
    const i = this.order[index];
    if (i === undefined) return undefined;
    return i < 0 ? this.last?.at(~i) : this.own?.[i];
  }

  /**
   * The same column with the values it lacks filled in by `lookup(index)` (itself when none could be);
   * `missing(index)` is called for each member it cannot fill. Values a complete last list holds are
   * not looked at.
   */
  filled(lookup: (index: number) => T | undefined, missing: (index: number) => void): ComposedColumn<T> {
    const values: (T | undefined)[] = Array.from({ length: this.own?.length ?? 0 }, (_, i) => this.own?.[i]);
    let order: Int32Array | undefined; // copied once a value of the last list's must be held here
    let filledAny = false;
    const lastComplete = this.last?.complete === true;
    for (let index = 0; index < this.order.length; index++) {
      const i = this.order[index]!;
      if (i < 0 ? lastComplete || this.last?.at(~i) !== undefined : values[i] !== undefined) continue;
      const value = lookup(index);
      if (value === undefined) missing(index);
      else if (i >= 0) values[i] = value;
      else (order ??= Int32Array.from(this.order))[index] = values.push(value) - 1;
      filledAny ||= value !== undefined;
    }
    return filledAny ? new ComposedColumn(order ?? this.order, this.last, values) : this;
  }
}
