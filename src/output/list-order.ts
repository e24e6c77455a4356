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
   * was carried over unchanged), else -1. The manifest writer copies such rows in runs.
   */
  tableRow?: (index: number) => number;
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
}

/** A list's members as read or ordered, before any hashes are attached. */
export type ListMembers = Required<Pick<ListOrder, 'names' | 'lengths' | 'entries'>> & Pick<ListOrder, 'tableRow' | 'table'>;

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
 * member j, or k for this build's member k (see CreatorsList.listOrder).
 */
export class ComposedColumn<T> implements Column<T> {
  constructor(
    private readonly order: ArrayLike<number>,
    private readonly last: Column<T> | undefined,
    private readonly own: ArrayLike<T> | undefined,
  ) {}

  get length(): number {
    return this.order.length;
  }

  at(index: number): T | undefined {
    const i = this.order[index];
    if (i === undefined) return undefined;
    return i < 0 ? this.last?.at(~i) : this.own?.[i];
  }
}
