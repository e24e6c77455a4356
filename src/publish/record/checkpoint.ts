/**
 * A long publish records its progress in the bucket as it goes, so that a publisher taking over after
 * a crash re-sends only what was in flight, not the whole tree. Every `checkpointProfiles` profiles
 * uploaded (and only then: a short publish writes no checkpoint):
 *
 *   1. the uploads in flight finish (the profiles are sent in chunks);
 *   2. a state is written with the publish's current id, so it resolves the intent written before the
 *      chunk: what was live before, with every profile sent so far live as the tree has it;
 *   3. a new intent, with a new id, over that state, names what is left: the profiles not sent yet,
 *      the documents, the list, and the deletions.
 *
 * A crash at any moment leaves a record record.ts trusts: before 2, the last checkpoint's state and an
 * intent naming at most what was left then; between 2 and 3, a settled state (nothing was sent since);
 * after 3, the new state and intent. A first publish killed half-way thus no longer leaves a prefix
 * with no trusted record, which the next publisher would list and send again whole (the documents'
 * `meta` differs between two machines' trees, so their ETags never match).
 */
import type { Remote } from '../bucket/client.js';
import type { LocalTree } from '../plan/local.js';
import type { PublishPlan } from '../plan/plan.js';
import { writeIntent, writeState, type RemoteRecord } from './record.js';
import { newPublishId, type IntentToWrite } from './format.js';
import type { LiveSet } from '../plan/live-set.js';
import { ProfileTable, TableBuilder, union, type RowSource } from '../plan/profile-table.js';

/** Profiles sent between two checkpoints, unless the publish's options say otherwise. */
export const DEFAULT_CHECKPOINT_PROFILES = 100_000;

export class Checkpoints {
  /** The profiles sent so far: the plan's first `sent` (chunks are sent in the plan's order). */
  private sent = 0;
  /** Those profiles with the tree's hashes, in name order (the plan's order), grown chunk by chunk: rows of the tree's table, not copies. */
  private readonly sentRows: TableBuilder;

  private constructor(
    private readonly remote: Remote,
    private readonly tree: LocalTree,
    private readonly plan: PublishPlan,
    /** What was live before this publish (the record's, or a listing's); undefined when nothing was. */
    private readonly before: LiveSet | undefined,
    /** The record as this publish last wrote it, and the id its last intent has. */
    public record: RemoteRecord,
    public id: string,
    /** How many profiles to send between two checkpoints. */
    readonly every: number,
  ) {
    this.sentRows = new TableBuilder(tree.profiles.bytes);
  }

  /** Writes the publish's first intent (naming the whole plan, over `base`), and starts counting. */
  static async begin(
    remote: Remote,
    tree: LocalTree,
    plan: PublishPlan,
    before: LiveSet | undefined,
    record: RemoteRecord,
    base: string,
    every = DEFAULT_CHECKPOINT_PROFILES,
  ) {
    const id = newPublishId();
    const written = await writeIntent(remote, record, intentOf(id, base, plan));
    return new Checkpoints(remote, tree, plan, before, written, id, every);
  }

  /**
   * Whether this publish writes any checkpoint: one follows each chunk of `every` profiles but the
   * last (send.ts), so only a plan of more than one chunk does. Otherwise `before` is never read.
   */
  get writesAny(): boolean {
    return this.plan.profiles.length > this.every;
  }

  /** After the plan's next `count` profiles were sent (none in flight): the state with them live, then the intent of what is left. */
  async after(count: number): Promise<void> {
    const picked = this.plan.profiles;
    for (let index = this.sent; index < this.sent + count; index++) this.sentRows.addRow(this.tree.profiles, picked.row(index));
    this.sent += count;
    const files = this.before?.files ?? new Map<string, string>();
    const profiles = this.liveProfiles();
    const stateEtag = await writeState(this.remote, this.record, this.id, profiles, files, {
      tree: undefined,
      profiles: profiles.size,
      files: files.size,
    });
    const base = this.id;
    this.id = newPublishId();
    this.record = await writeIntent(this.remote, { ...this.record, stateEtag }, intentOf(this.id, base, this.plan, this.sent));
  }

  /** What was live before, with every profile sent so far as the tree has it: one merge of the two. */
  private liveProfiles(): RowSource {
    return union(this.before?.profiles ?? ProfileTable.EMPTY, this.sentRows.build());
  }
}

/** The intent of a publish of `plan` from its `from`th profile on, planned over the state `base`: every key it may touch. */
export function intentOf(id: string, base: string, plan: PublishPlan, from = 0): IntentToWrite {
  return {
    id,
    base,
    // Disjoint: the tree's profiles to send, and live ones it no longer has.
    profiles: (function* () {
      for (let i = from; i < plan.profiles.length; i++) yield plan.profiles.name(i);
      yield* plan.deleteProfiles.keys();
    })(),
    files: new Set([...plan.files, ...plan.listFiles]),
    strays: new Set(plan.deleteKeys),
  };
}
