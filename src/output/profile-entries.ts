/**
 * A manifest's profiles: lower-case username -> entry (manifest.ts). Read as a Map, but held as the
 * lines of the manifest a watcher's last cycle wrote (an EntryTable, `base`) under the entries set
 * since (`overlay`): a cycle that changes 1% of a million profiles holds a million lines as bytes and
 * ten thousand entries, not a million strings of each. A manifest read from disk, or a full pass's,
 * has no base: all its entries are set, kept as bytes too (entry-map.ts).
 */
import { EntryMap, type ReadonlyEntries } from './entry-map.js';
import { EntryTable } from './entry-table.js';

export class ProfileEntries implements Iterable<[string, string]> {
  private readonly overlay = new EntryMap();
  /** 1 for a base row whose profile was deleted or set anew (then it is in `overlay`). */
  private readonly removed: Uint8Array;
  /** Base rows not removed. */
  private live: number;

  constructor(readonly base: EntryTable = EntryTable.EMPTY) {
    this.removed = new Uint8Array(base.size);
    this.live = base.size;
  }

  static of(entries: Iterable<readonly [string, string]>): ProfileEntries {
    const profiles = new ProfileEntries();
    for (const [name, entry] of entries) profiles.set(name, entry);
    return profiles;
  }

  get size(): number {
    return this.live + this.overlay.size;
  }

  get(name: string): string | undefined {
    return this.overlay.get(name) ?? this.heldEntry(name);
  }

  /** `name`'s entry in the base, while its row holds it (not deleted or set anew since). */
  heldEntry(name: string): string | undefined {
    if (this.live === 0) return undefined;
    const row = this.base.find(name);
    return row !== -1 && this.removed[row] === 0 ? this.base.entry(row) : undefined;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  set(name: string, entry: string): this {
    if (this.live > 0 && !this.overlay.has(name)) this.removeRow(this.base.find(name));
    this.overlay.set(name, entry);
    return this;
  }

  delete(name: string): boolean {
    if (this.overlay.delete(name)) return true;
    return this.live > 0 && this.removeRow(this.base.find(name));
  }

  /**
   * The first base row in [row, end) that does not hold its profile's entry, deleted or set anew
   * since (end: all of them do).
   */
  heldUntil(row: number, end: number): number {
    const { removed } = this;
    while (row < end && removed[row] === 0) row++;
    return row;
  }

  /** The entries set over the base (all of them, with no base). */
  get setEntries(): ReadonlyEntries {
    return this.overlay;
  }

  /** Whether any entry may be PENDING (a base that holds one, if any of its rows is still live). */
  anyPending(pending: string): boolean {
    if (this.live > 0 && this.base.anyPending) return true;
    return this.overlay.includes(pending);
  }

  *[Symbol.iterator](): IterableIterator<[string, string]> {
    const { base, removed } = this;
    if (this.live > 0) for (let row = 0; row < base.size; row++) if (removed[row] === 0) yield [base.name(row), base.entry(row)];
    yield* this.overlay;
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this) yield name;
  }

  *values(): IterableIterator<string> {
    for (const [, entry] of this) yield entry;
  }

  private removeRow(row: number): boolean {
    if (row === -1 || this.removed[row] === 1) return false;
    this.removed[row] = 1;
    this.live--;
    return true;
  }
}
