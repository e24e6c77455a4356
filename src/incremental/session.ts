/**
 * What a long-lived process (the watcher) keeps between passes so that a pass reads only the users
 * whose rows changed: one store connection, holding a shadow copy of the snapshot its last pass
 * published (store/shadow.ts), and what that pass left in the out dir. A pass may skip the other
 * users only while both still hold: the copy was taken in the same read transaction as the rows that
 * pass published, and the out dir's manifest is still exactly the one that pass wrote.
 *
 * A one-shot `build` has no session: it reads every row (and keeps unchanged ones by their row
 * signatures instead, see row-keeper.ts).
 */
import { statSync } from 'node:fs';
import { sameRenderKey, type RenderKey } from '../core/render-key.js';
import { manifestStamp } from '../output/manifest.js';
import { ManifestCache } from '../output/manifest-cache.js';
import type { RowWarning } from '../render/user.js';
import { cannotFollow, type ClockPosition, type ClockReading } from '../store/clock.js';
import { ProfileStore, type OpenStoreOptions } from '../store/read.js';
import type { StoreChanges } from '../store/shadow.js';
import type { ChangesFoundBy, Selection } from './selection.js';

/** The last published pass, as far as a selective pass needs it. */
interface Published {
  outDir: string;
  /** What it was rendered with (core/render-key.ts). */
  renderKey: RenderKey;
  /** The manifest as that pass wrote it (inode, size, mtime). */
  manifest: string;
  /** Its snapshot time: account ages in the tree are as of then. */
  snapshotMs: number;
  /**
   * The store's stamp taken before its snapshot was read, settled or not (see store/stamp.ts): a
   * later settled stamp equal to it says nothing was committed since.
   */
  storeStamp: string | undefined;
  /** Where the store's change clock stood in its snapshot; undefined when it had none. */
  clock: ClockPosition | undefined;
  /** Users it had warnings for: read again by every pass (they have no row signature either). */
  warned: ReadonlySet<number>;
}

export type { ChangeSource, ChangesFoundBy, Selection } from './selection.js';

export class StoreSession {
  private store: ProfileStore | undefined;
  /**
   * Device, inode and birth time of the file the connection opened: another file at the path means
   * reopening (the birth time tells a new file that was given a freed inode number).
   */
  private identity: string | undefined;
  private published: Published | undefined;
  /** The manifest the last build wrote, kept between this session's builds (output/manifest-cache.ts). */
  readonly manifests = new ManifestCache();
  /**
   * Why the last `selection` did not follow the store's change clock, when it has or had one (see
   * `clockFallback`); null otherwise. Set even when every row is read: a lean copy is never compared.
   */
  fallback: string | null = null;

  constructor(
    readonly file: string,
    private readonly options: OpenStoreOptions = {},
  ) {}

  /** The connection, reopened (and the copy dropped) when the path names another file now. */
  open(): ProfileStore {
    const identity = fileIdentity(this.file);
    if (this.store !== undefined && identity !== undefined && identity === this.identity) {
      this.store.recheckSchema();
      return this.store;
    }
    this.close();
    this.store = ProfileStore.open(this.file, this.options);
    this.identity = identity;
    return this.store;
  }

  close(): void {
    this.store?.close();
    this.store = undefined;
    this.published = undefined;
  }

  /**
   * The users a pass over `outDir` at `snapshotMs` must read, when it may skip the rest: those whose
   * rows or child rows changed since the last pass, whose account age may have turned over since, and
   * those that pass had warnings for. Undefined when a pass must read every row. Runs inside the
   * pass's read transaction, where `clock` was read. The changes come from the store's change clock
   * when the last pass's position on it still holds; else from the store's settled stamp
   * (`storeStamp`, taken before this transaction began) when it is the last pass's (nothing can have
   * changed); else from a comparison of the whole store with the copy.
   */
  selection(
    store: ProfileStore,
    outDir: string,
    renderKey: RenderKey,
    snapshotMs: number,
    storeStamp: string | undefined,
    clock: ClockReading,
  ): Selection | undefined {
    // Taken: until a pass records itself again, the next one reads every row (the copy's changes
    // roll back with a failed pass, but what it knows of them here would not).
    const last = this.published;
    const holds = this.holds(store, outDir, renderKey);
    this.published = undefined;
    this.fallback = null;
    if (last === undefined || !holds) return undefined;
    const fallback = cannotFollow(last.clock, clock);
    this.fallback = clockFallback(last.clock, clock, fallback);
    const by: ChangesFoundBy =
      fallback === undefined ? 'clock' : storeStamp !== undefined && storeStamp === last.storeStamp ? 'stamp' : 'comparison';
    let changes: StoreChanges | undefined;
    try {
      if (by === 'clock') changes = store.shadow.followClock(store.clockChanges(last.clock!.version), last.snapshotMs, snapshotMs);
      else if (by === 'stamp') changes = store.shadow.agesTurning(last.snapshotMs, snapshotMs);
      else changes = store.shadow.changes(last.snapshotMs, snapshotMs);
    } catch {
      // Whatever the comparison tripped on, a pass that reads every row is still right (and takes
      // the copy afresh).
      changes = undefined;
    }
    if (changes === undefined) return undefined;
    for (const id of last.warned) changes.users.add(id);
    const source = { by, clockFallback: this.fallback };
    return { users: changes.users, warned: last.warned, stableUntilMs: changes.stableUntilMs, source, copy: store.shadow };
  }

  /** Forgets the last pass (a pass is about to change the tree without using it); undefined. */
  forget(): undefined {
    this.published = undefined;
    this.fallback = null;
    return undefined;
  }

  /** Whether the last pass recorded is still the one in `outDir`, as this store's copy knows it. */
  holds(store: ProfileStore, outDir: string, renderKey: RenderKey): boolean {
    const last = this.published;
    return (
      store === this.store &&
      last !== undefined &&
      last.outDir === outDir &&
      sameRenderKey(last.renderKey, renderKey) &&
      store.shadow.captured &&
      manifestStamp(outDir) === last.manifest
    );
  }

  /**
   * Records a committed pass whose rows the copy now matches (`store.shadow` was captured or updated
   * in that pass's read transaction); forgets the last one otherwise.
   */
  recordPublished(
    store: ProfileStore,
    pass: Omit<Published, 'manifest' | 'warned' | 'clock'> & { warnings: readonly RowWarning[]; clock: ClockReading | undefined },
  ): void {
    const { outDir, renderKey, snapshotMs, storeStamp } = pass;
    const clock = pass.clock?.state === 'present' ? pass.clock.position : undefined;
    this.published = undefined;
    const manifest = manifestStamp(pass.outDir);
    const warned = new Set(pass.warnings.map((w) => w.id));
    // A warning's id past 2^53 is rounded and cannot name its row: such a store is always read whole.
    if (store !== this.store || !store.shadow.captured || manifest === undefined || ![...warned].every(Number.isSafeInteger)) return;
    this.published = { outDir, renderKey, manifest, snapshotMs, storeStamp, clock, warned };
  }
}

/**
 * Why a pass did not follow the change clock, worth an operator's eye: the store has a clock, or had
 * one at the last pass. A store that never had one is today's normal, and says nothing.
 */
export function clockFallback(last: ClockPosition | undefined, now: ClockReading | undefined, why: string | undefined): string | null {
  if (why === undefined || now === undefined) return null;
  if (now.state === 'absent' && last === undefined) return null;
  return why;
}

function fileIdentity(file: string): string | undefined {
  try {
    const stats = statSync(file, { bigint: true });
    return `${stats.dev}:${stats.ino}:${stats.birthtimeNs}`;
  } catch {
    return undefined;
  }
}
