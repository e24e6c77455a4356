/**
 * The one place that decides what a build may skip. A build asks, in order:
 * 1. `unchanged()`, before reading anything: the last pass's record still vouches for the whole
 *    tree (same tool, base URL, manifest, a settled and equal store stamp, no account age turned), so
 *    nothing is read or written (last-pass.ts, store/stamp.ts);
 * 2. `selection()`, inside the pass's read transaction: a long-lived session may read only the users
 *    whose rows changed since its last pass (session.ts, store/shadow.ts), and carries the rest over;
 * 3. per row, a `RowKeeper` keeps a profile whose row signature is unchanged (row-keeper.ts);
 * then `passStaged()`, `committing()` / `commitFailed()` and `record()` keep those records true.
 * Below all of these, the output transaction writes only documents whose data hash changed
 * (output/tree.ts).
 */
import type { RenderKey } from '../core/render-key.js';
import type { ProfileStore } from '../store/read.js';
import type { Slice } from '../core/slice.js';
import type { StoreStamp } from '../store/stamp.js';
import { cannotFollow, type ClockReading } from '../store/clock.js';
import { currentPass, forgetPass, recordPass, type LastPass, type PassConditions, type PassResult } from './last-pass.js';
import type { ChangeSource, Selection } from './selection.js';
import type { StoreSession } from './session.js';
import { ClockRecord } from './clock-record.js';

export interface PlanInputs {
  store: ProfileStore;
  /** A long-lived reader (the watcher's), which remembers its last pass. */
  session: StoreSession | undefined;
  /** The users the pass publishes: the session's copy holds those alone. */
  users: Slice;
  /** Absolute. */
  outDir: string;
  /** What the tree is rendered with (core/render-key.ts). */
  renderKey: RenderKey;
  snapshotMs: number;
  /** Read every row even when the records say nothing changed. */
  fullPass: boolean;
  /** How long the store's files must have been left alone before their stamp is trusted (tests). */
  storeSettleMs: number | undefined;
}

/** What a committed pass published, for the records. */
export interface CommittedPass extends PassResult {
  /** The first snapshot time at which a published profile's account age turns over. */
  stableUntilMs: number;
}

export class PassPlan {
  /** Taken before the snapshot is read, so the rows a pass reads are never older than it. */
  private readonly stamp: StoreStamp;
  private readonly conditions: PassConditions;
  /** The store's change clock, read in the pass's snapshot. */
  private clock: ClockReading | undefined;
  /** How the selection found what changed, when there was one. */
  private selected: Selection | undefined;
  /** A build without a session follows the clock from its out dir's record instead (clock-record.ts). */
  private readonly clockRecord: ClockRecord | undefined;

  constructor(private readonly inputs: PlanInputs) {
    this.stamp = inputs.store.stamp(inputs.storeSettleMs);
    this.conditions = { renderKey: inputs.renderKey, store: this.stamp.value };
    const { store, outDir, renderKey, users, session } = inputs;
    this.clockRecord = session === undefined ? new ClockRecord(store, outDir, renderKey, users) : undefined;
  }

  /** Only a settled stamp may say the store is as the last pass read it (see store/stamp.ts). */
  private get trustedStamp(): string | undefined {
    return this.stamp.settled ? this.stamp.value : undefined;
  }

  /** The last pass, when its output still stands exactly as a new pass would write it. */
  unchanged(): LastPass | undefined {
    const { outDir, snapshotMs, fullPass, session } = this.inputs;
    if (this.trustedStamp === undefined || fullPass) return undefined;
    const last = currentPass(outDir, this.conditions, snapshotMs);
    if (last !== undefined && session !== undefined) this.adoptUnchanged(session, last);
    return last;
  }

  /** Inside the pass's read transaction: the users to read, or undefined for every row. */
  selection(): Selection | undefined {
    const { session, store, outDir, renderKey, snapshotMs, fullPass } = this.inputs;
    const clock = (this.clock = store.clock());
    if (session === undefined) this.selected = fullPass ? undefined : this.clockRecord!.selection(clock, snapshotMs);
    else if (fullPass) session.forget();
    else this.selected = session.selection(store, outDir, renderKey, snapshotMs, this.trustedStamp, clock);
    return this.selected;
  }

  /** How the staged pass found what changed (`selective`: it read only the selection). */
  source(selective: boolean): ChangeSource {
    if (selective && this.selected !== undefined) return this.selected.source;
    const clock = this.clock;
    if (clock === undefined) return { by: 'every row', clockFallback: null };
    const why =
      clock.state === 'unusable'
        ? (cannotFollow(undefined, clock) ?? null)
        : (this.inputs.session?.fallback ?? this.clockRecord?.fallback ?? null);
    return { by: 'every row', clockFallback: why };
  }

  /** Still inside the read transaction: the session's copy (or the build's record) is brought to the snapshot just staged. */
  passStaged(selective: boolean): void {
    const { store, session } = this.inputs;
    if (session === undefined) this.clockRecord!.passStaged(selective ? this.selected : undefined, this.clock!);
    // A copy of the wrong kind for the store's clock now (tracked or untracked since) is taken anew.
    else if (selective && store.shadow.lean === leanFor(this.clock)) store.shadow.update();
    else store.shadow.capture(this.inputs.users, { lean: leanFor(this.clock) });
  }

  /** The tree is about to change: the records must not vouch for it until the commit is done. */
  committing(): void {
    forgetPass(this.inputs.outDir);
    ClockRecord.forget(this.inputs.outDir);
  }

  /** The commit failed: the session's copy was brought up to a snapshot the tree does not show. */
  commitFailed(): void {
    this.inputs.store.shadow.discard();
  }

  /** Records a committed pass, for the next build (the record) and the next cycle (the session). */
  record(pass: CommittedPass): void {
    const { store, session, outDir, renderKey, snapshotMs } = this.inputs;
    const { clock } = this;
    session?.recordPublished(store, { outDir, renderKey, snapshotMs, storeStamp: this.stamp.value, clock, warnings: pass.warnings });
    const { profiles, creators, skipped, files, warnings } = pass;
    const stableUntilMs = pass.stableUntilMs === Infinity ? null : pass.stableUntilMs;
    recordPass(outDir, { ...this.conditions, snapshotMs, stableUntilMs, profiles, creators, skipped, files, warnings });
    if (clock !== undefined)
      this.clockRecord?.record(
        clock,
        snapshotMs,
        warnings.map((w) => w.id),
      );
  }

  /**
   * An unchanged store in a session: the tree stands as the last pass left it, and the store is still
   * the snapshot that pass read, so the session copies it now (once) for later passes to compare with.
   * The copy only counts if the store's stamp did not move while it was taken.
   */
  private adoptUnchanged(session: StoreSession, last: LastPass): void {
    const { store, outDir, renderKey, storeSettleMs, users } = this.inputs;
    if (session.holds(store, outDir, renderKey)) return;
    try {
      let clock: ClockReading | undefined;
      const copied = store.inSnapshot(() => {
        clock = store.clock();
        return store.shadow.capture(users, { lean: leanFor(clock) }) && store.stamp(storeSettleMs).value === this.stamp.value;
      });
      if (!copied) return;
      session.recordPublished(store, {
        outDir,
        renderKey,
        snapshotMs: last.snapshotMs,
        storeStamp: this.stamp.value,
        clock,
        warnings: last.warnings,
      });
      // The next pass would otherwise parse the manifest first: read it now, while nothing changed.
      session.manifests.prime(outDir);
    } catch {
      // Best effort: the build's answer stands; the next pass that changes anything reads every row.
    }
  }
}

/**
 * A session's copy of a store whose change clock it can follow keeps only what the clock cannot say
 * (store/shadow.ts); a store without one (or with a broken one) is compared with a whole copy.
 */
const leanFor = (clock: ClockReading | undefined) => clock?.state === 'present';
