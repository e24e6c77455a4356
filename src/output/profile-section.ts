/**
 * Writes a manifest's profile lines: the creators list's members first, in list order, then every
 * other profile in ascending names. A line that is a row of the last manifest's table (the profile
 * was carried over unchanged) is copied from there with its neighbours in one run, not encoded
 * again: in a watch cycle at a million profiles nearly every line is one. With a recorder, where
 * each line lands is noted, so that the section read back is the next cycle's table.
 */
import type { ReadonlyEntries } from './entry-map.js';
import type { EntryTable, EntryTableRecorder } from './entry-table.js';
import type { BufferedFileWriter } from './file-writer.js';
import type { ListOrder } from './list-order.js';
import type { ProfileEntries } from './profile-entries.js';

/** What decides which profiles are members, and which entry is a pending one (manifest.ts's rules). */
export interface SectionRules {
  /** Whether row `row`'s entry in `entries` records no list length: the profile is not a member. */
  isOtherRow(entries: ReadonlyEntries, row: number): boolean;
  pending: string;
}

export class ProfileSectionWriter {
  private readonly table: EntryTable;
  /** The run of table rows not written yet: [runFrom, runTo). */
  private runFrom = 0;
  private runTo = 0;

  constructor(
    private readonly out: BufferedFileWriter,
    private readonly profiles: ProfileEntries,
    private readonly rules: SectionRules,
    private readonly recorder: EntryTableRecorder | undefined,
  ) {
    this.table = profiles.base;
  }

  /** The list's members, in list order. */
  members(list: ListOrder): void {
    const count = list.names.length;
    const rows = list.table !== this.table ? undefined : (list.tableRows ?? Int32Array.from({ length: count }, (_, i) => i));
    for (let i = 0; i < count;) {
      const copied = rows === undefined ? 0 : this.takeHeldRun(rows, i, count);
      if (copied > 0) {
        i += copied;
        continue;
      }
      this.memberLine(list.names.at(i)!, list.entries?.at(i), list.lengths[i]);
      i++;
    }
    this.flush();
  }

  /**
   * Takes the members from `i` on that are consecutive member rows of the table, each still holding
   * its profile's entry, as one run; returns how many (0: member i's line is not one to copy). A
   * scan of the column, not a call per member: at a million members, nearly all of them in a cycle.
   */
  private takeHeldRun(rows: Int32Array, i: number, count: number): number {
    const first = rows[i]!;
    if (first < 0 || first >= this.table.memberCount) return 0;
    const last = Math.min(count, i + this.table.memberCount - first);
    let end = i + 1;
    for (let row = first + 1; end < last && rows[end] === row; row++) end++;
    const held = this.profiles.heldUntil(first, first + end - i);
    if (held > first) this.take(first, held);
    return held - first;
  }

  /**
   * Every profile that is not a member, in ascending names: the table's other rows still held,
   * merged with the entries set over it. With `everyProfile` (no list), every profile whatever its
   * entry, in no particular order.
   */
  others(everyProfile: boolean): void {
    const { table, profiles } = this;
    if (everyProfile) {
      this.takeHeld(0, table.size);
      this.flush();
      for (const [name, entry] of profiles.setEntries) this.line(name, entry, undefined);
      return;
    }
    const set = profiles.setEntries;
    const others: number[] = [];
    for (let row = 0; row < set.rowCount; row++) if (set.nameAt(row) !== undefined && this.rules.isOtherRow(set, row)) others.push(row);
    others.sort((a, b) => (set.nameAt(a)! < set.nameAt(b)! ? -1 : 1));
    let row = table.memberCount;
    for (const other of others) {
      const name = set.nameAt(other)!;
      const until = table.firstNotBefore(name, row, table.size);
      this.takeHeld(row, until);
      row = until;
      this.setLine(set, other, name, undefined);
    }
    this.takeHeld(row, table.size);
    this.flush();
  }

  /** Takes the rows in [from, to) that still hold their profile's entry, in runs. */
  private takeHeld(from: number, to: number): void {
    const { profiles } = this;
    for (let row = from; row < to; row++) {
      const held = profiles.heldUntil(row, to);
      if (held > row) this.take(row, held);
      row = held;
    }
  }

  /**
   * Adds table rows [from, to) to the run to copy (written first if they do not follow it). A run
   * never crosses from the members' rows to the others': `members` flushes before `others` takes.
   */
  private take(from: number, to: number): void {
    if (from === this.runTo && this.runTo > this.runFrom) {
      this.runTo = to;
      return;
    }
    this.flush();
    this.runFrom = from;
    this.runTo = to;
  }

  /**
   * A member's line: its entry `known` from the list, else the one set this cycle (copied as the
   * bytes it is kept as), else the table's, else PENDING.
   */
  private memberLine(name: string, known: string | undefined, listLength: number | undefined): void {
    if (known !== undefined) return this.line(name, known, listLength);
    const set = this.profiles.setEntries;
    const row = set.rowOf(name);
    if (row !== -1) return this.setLine(set, row, name, listLength);
    this.line(name, this.profiles.heldEntry(name) ?? this.rules.pending, listLength);
  }

  /** The line of `name`, whose entry is row `row` of the entries set over the table. */
  private setLine(set: ReadonlyEntries, row: number, name: string, listLength: number | undefined): void {
    const length = set.entryLength(row);
    if (length === -1) return this.line(name, set.entryAt(row), listLength);
    this.flush();
    this.out.writeTabbedRow('u', name, set, row, length);
    this.recorder?.line(name, length, listLength, set.entryIs(row, this.rules.pending));
  }

  private line(name: string, entry: string, listLength: number | undefined): void {
    this.flush();
    this.out.writeTabbedLine('u', name, entry);
    this.recorder?.line(name, entry.length, listLength, entry === this.rules.pending);
  }

  private flush(): void {
    const { runFrom, runTo, table } = this;
    if (runTo <= runFrom) return;
    const from = table.lineStart(runFrom);
    this.out.writeCopied(table.bytes.subarray(from, table.lineStart(runTo)), from);
    this.recorder?.rowsOf(table, runFrom, runTo);
    this.runFrom = this.runTo = 0;
  }
}
