/**
 * What a one-shot `build` leaves in its out dir to follow the store's change clock from (a CI build
 * after a change): where the clock stood in the snapshot the tree shows, and the few columns of
 * every user read that a selective pass needs to know without reading them again: the name each one
 * held, when its account age turns over, and the decoration it wears. A watcher keeps the same in
 * its copy of the store (store/shadow.ts); a build has no such copy, and reads this file instead.
 *
 * It is removed before a pass changes the tree and written after its commit (as the last pass's
 * record, last-pass.ts), and it names the manifest it goes with, so it never vouches for another tree.
 * Only a store with a clock gets one: without a clock, a build works exactly as before.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_DIR } from '../core/layout.js';
import { sameRenderKey, type RenderKey } from '../core/render-key.js';
import { guard, replaceFileWith } from '../output/folders.js';
import { manifestStamp } from '../output/manifest.js';
import { nextAgeChangeMs, parseStoreDate, wholeDaysBetween } from '../render/dates.js';
import { cannotFollow, type ClockPosition, type ClockReading } from '../store/clock.js';
import type { ProfileStore, RecordedUser } from '../store/read.js';
import type { Slice } from '../core/slice.js';
import type { ChangeSource, LastPassCopy, Selection } from './selection.js';

export const CLOCK_RECORD_FILE = `${STATE_DIR}/clock-record.json`;

/** The file: columns of equal length, one entry per user read (JSON parses arrays fast). */
interface RecordFile {
  format: 1;
  renderKey: string;
  manifest: string;
  position: ClockPosition;
  snapshotMs: number;
  warned: number[];
  ids: number[];
  /** Lower-cased published name, or null when it is not text. */
  names: (string | null)[];
  /** created_at parsed as the renderer parses it; null when it cannot be (such a row has a warning). */
  created: (number | null)[];
  /** decoration_id as text (a superset of the renderer's exact match), or null. */
  decorations: (string | null)[];
}

type Columns = Pick<RecordFile, 'ids' | 'names' | 'created' | 'decorations'>;

/**
 * The users a recorded pass read: what a selective pass asks of its last pass (LastPassCopy). Kept
 * as the file's columns and an index by id, with no object per user: a million of them are read,
 * updated and written by every build.
 */
export class RecordedUsers implements LastPassCopy {
  /** id -> row in the columns; a row no longer indexed (a user read again) is left out of the file. */
  private readonly rows = new Map<number, number>();
  private byName: Map<string, number[]> | undefined;

  private constructor(private readonly columns: Columns) {
    columns.ids.forEach((id, row) => this.rows.set(id, row));
  }

  static of(rows: Iterable<RecordedUser>): RecordedUsers {
    const copy = new RecordedUsers({ ids: [], names: [], created: [], decorations: [] });
    copy.add(rows);
    return copy;
  }

  static fromFile(file: RecordFile): RecordedUsers {
    return new RecordedUsers(file);
  }

  usernames(ids: Iterable<number>): Map<number, unknown> {
    const names = new Map<number, unknown>();
    for (const id of ids) {
      const row = this.rows.get(id);
      const name = row === undefined ? null : this.columns.names[row];
      if (name !== null && name !== undefined) names.set(id, name);
    }
    return names;
  }

  holders(name: string): number[] {
    if (this.byName === undefined) {
      this.byName = new Map();
      for (const [id, row] of this.rows) {
        const held = this.columns.names[row];
        if (held !== null && held !== undefined) this.byName.set(held, [...(this.byName.get(held) ?? []), id]);
      }
    }
    return this.byName.get(name) ?? [];
  }

  /** The users whose account age differs between the two snapshot times, or that have no date; and the next turn after `atMs`. */
  agesTurning(sinceMs: number, atMs: number): { users: number[]; stableUntilMs: number } {
    const users: number[] = [];
    let stableUntilMs = Infinity;
    for (const [id, row] of this.rows) {
      const created = this.columns.created[row]!;
      if (created === null || wholeDaysBetween(created, sinceMs) !== wholeDaysBetween(created, atMs)) users.push(id);
      else stableUntilMs = Math.min(stableUntilMs, nextAgeChangeMs(created, atMs));
    }
    return { users, stableUntilMs };
  }

  wearers(decorations: readonly unknown[]): number[] {
    const wanted = new Set(decorations.map(String));
    const { decorations: worn } = this.columns;
    return [...this.rows].filter(([, row]) => worn[row] !== null && wanted.has(worn[row]!)).map(([id]) => id);
  }

  /** Replaces the users in `read` by what the store holds for them now (`rows`: those it still publishes). */
  update(read: ReadonlySet<number>, rows: Iterable<RecordedUser>): this {
    for (const id of read) this.rows.delete(id);
    this.add(rows);
    this.byName = undefined;
    return this;
  }

  toFile(header: Omit<RecordFile, keyof Columns>): RecordFile {
    const file: RecordFile = { ...header, ids: [], names: [], created: [], decorations: [] };
    const { names, created, decorations } = this.columns;
    for (const [id, row] of this.rows) {
      file.ids.push(id);
      file.names.push(names[row]!);
      file.created.push(created[row]!);
      file.decorations.push(decorations[row]!);
    }
    return file;
  }

  private add(rows: Iterable<RecordedUser>): void {
    const { ids, names, created, decorations } = this.columns;
    for (const [id, username, createdAt, decoration] of rows) {
      this.rows.set(id, ids.length);
      ids.push(id);
      names.push(typeof username === 'string' ? username.toLowerCase() : null);
      created.push(parseStoreDate(createdAt)?.ms ?? null);
      decorations.push(decoration === null ? null : String(decoration));
    }
  }
}

/** A build's view of its out dir's clock record: reads it, follows it, and writes the next one. */
export class ClockRecord {
  /** The copy the pass staged against, and the users it read, until `record` writes the next one. */
  private next: RecordedUsers | undefined;
  /** Why the record was not followed though the store has a clock (`selection`); null otherwise. */
  fallback: string | null = null;

  constructor(
    private readonly store: ProfileStore,
    private readonly outDir: string,
    private readonly renderKey: RenderKey,
    private readonly slice: Slice,
  ) {}

  /**
   * Inside the pass's read transaction: the users to read when the out dir's record still holds for
   * this tree and the store's clock can be followed from its position; undefined for every row.
   */
  selection(clock: ClockReading, snapshotMs: number): Selection | undefined {
    const file = this.read();
    if (file === undefined) return undefined;
    const fallback = cannotFollow(file.position, clock);
    this.fallback = fallback ?? null;
    if (fallback !== undefined || snapshotMs < file.snapshotMs) return undefined;
    const copy = RecordedUsers.fromFile(file);
    const changes = this.store.clockChanges(file.position.version);
    const ages = copy.agesTurning(file.snapshotMs, snapshotMs);
    const users = new Set<number>([...changes.users.filter(Number.isSafeInteger), ...ages.users, ...file.warned]);
    if (changes.decorations.length > 0) for (const id of copy.wearers(changes.decorations)) users.add(id);
    const source: ChangeSource = { by: 'clock', clockFallback: null };
    this.next = copy;
    return { users, warned: new Set(file.warned), stableUntilMs: ages.stableUntilMs, source, copy };
  }

  /**
   * Still inside the read transaction: the copy brought to the snapshot just staged, from the users
   * the selective pass read (the store's selected users), or every user of a full pass.
   */
  passStaged(selection: Selection | undefined, clock: ClockReading): void {
    if (clock.state !== 'present') return void (this.next = undefined);
    const { store, slice } = this;
    this.next =
      selection === undefined || this.next === undefined
        ? RecordedUsers.of(store.recordedUsers(slice))
        : this.next.update(selection.users, store.recordedUsers(slice, true));
  }

  /** Before the tree changes: no record may vouch for it until the commit is done. */
  static forget(outDir: string): void {
    guard(`cannot update ${join(outDir, STATE_DIR)}`, () => rmSync(join(outDir, CLOCK_RECORD_FILE), { force: true }));
  }

  /** After the commit: the record of this pass. Best effort, as the last pass's record. */
  record(clock: ClockReading, snapshotMs: number, warned: readonly number[]): void {
    const manifest = manifestStamp(this.outDir);
    const copy = this.next;
    this.next = undefined;
    if (clock.state !== 'present' || copy === undefined || manifest === undefined || !warned.every(Number.isSafeInteger)) return;
    const file = copy.toFile({ format: 1, renderKey: this.renderKey, manifest, position: clock.position, snapshotMs, warned: [...warned] });
    try {
      replaceFileWith(this.outDir, join(this.outDir, CLOCK_RECORD_FILE), JSON.stringify(file));
    } catch {
      // A full disk, say: the next build reads every row.
    }
  }

  private read(): RecordFile | undefined {
    try {
      const file = JSON.parse(readFileSync(join(this.outDir, CLOCK_RECORD_FILE), 'utf8')) as RecordFile;
      const holds =
        file.format === 1 &&
        sameRenderKey(file.renderKey, this.renderKey) &&
        file.manifest === manifestStamp(this.outDir) &&
        Array.isArray(file.ids) &&
        Array.isArray(file.warned);
      return holds ? file : undefined;
    } catch {
      return undefined;
    }
  }
}
