/**
 * `publish`: brings a bucket (S3, R2, GCS, MinIO) to exactly the built tree, touching only what
 * changed. Readers of the bucket never see a broken API, whenever the publish stops:
 *
 *   1. decide (tree against what is live: the remote state, or a listing) and apply the deletion
 *      guard, before anything is written;
 *   2. record the intent (what may change), so a publish killed half-way is finished by the next;
 *   3. upload new and changed profiles and documents, then the creators list (so every user the live
 *      list names has its profile objects: send.ts; a shard's list is joined, shard-list.ts), then
 *      delete what the tree no longer has;
 *   4. record the new state.
 *
 * Steps 2-4 run under the prefix's lock lease (lease/lease.ts), and the record is written only over
 * the version read (record/record.ts): several publishers on one prefix take turns, and none
 * overwrites what another recorded. A quiet check (the record already names this tree) takes no
 * lease; when the state names the manifest's own digest it reads only the two headers
 * (record/quiet.ts).
 *
 * A request that still fails after the SDK's attempts is sent again later in the publish (bucket/later.ts);
 * any other failure stops the publish where it is: nothing is deleted after a failed upload.
 *
 * The tree is read as it is, or (the watcher's own publish) as a generation its writer pinned
 * (output/pin.ts), which later commits leave alone however long the publish runs.
 */
import { performance } from 'node:perf_hooks';
import { outputError, SnapshotError } from '../core/errors.js';
import { resolveOutDir, PROFILE_DIRS } from '../core/layout.js';
import { collectAfterLettingGo } from '../core/memory.js';
import type { Slice } from '../core/slice.js';
import { OutDirLock } from '../output/lock.js';
import { entryHash } from '../output/manifest.js';
import { liveTree, type TreeReader } from '../output/pin.js';
import { DEFAULT_COMMIT_WAIT_MS } from '../output/settled.js';
import { Remote } from './bucket/client.js';
import { Later } from './bucket/later.js';
import { deleteObjects } from './bucket/upload.js';
import { scopeOf, type PublishScope } from './keys.js';
import { Lease } from './lease/lease.js';
import { leaseOptionsOf, lockWaitOf } from './lease/defaults.js';
import type { LiveSet } from './plan/live-set.js';
import { profilePaths, readLocalTree, treeShard, type LocalTree } from './plan/local.js';
import { forEachRow, TableBuilder, union, type RowSource } from './plan/profile-table.js';
import { guardDeletions, isEmptyPlan, LIST_FILES, planPublish, type PublishPlan } from './plan/plan.js';
import { listLive } from './plan/reconcile.js';
import { Checkpoints } from './record/checkpoint.js';
import { NO_BASE } from './record/format.js';
import { bucketHoldsTree } from './record/quiet.js';
import { namesTree, readRecord, writeState, type RemoteRecord } from './record/record.js';
import { outcomeOf, quietOutcome, unfencedNotice, type Outcome } from './outcome.js';
import type { PublishOptions, PublishReport } from './report.js';
import type { Run } from './run.js';
import { assertPresent, sendInOrder, TreeChanged } from './send.js';
import { joinBeforeDeleting, joinedOutcome } from './shard-list.js';
import { assertNotSharded, claimShardLayout } from './shards/layout.js';
import { assertShardWriters } from './shards/writers.js';
import { partIsWhole } from './shards/part.js';

const MAX_ATTEMPTS = 3;

export async function publish(given: PublishOptions): Promise<PublishReport> {
  const started = performance.now();
  // Made absolute once, here: everything below takes the out dir as it is.
  const options: Run = { ...given, out: resolveOutDir(given.out), later: new Later(given.laterPausesMs) };
  const reader = given.generation ?? liveTree(options.out);
  assertShardWriters(options.shard, options.singleWriter);
  const scope = scopeOf(treeShard(reader, options.shard));
  assertShardWriters(scope.shard, options.singleWriter);
  const remote = await Remote.open(options.remote);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const report = await publishOnce(remote, reader, options, scope);
        return {
          ...report,
          attempts: attempt,
          requests: { ...remote.counts },
          retries: remote.retries,
          sentLater: options.later.sent,
          seconds: (performance.now() - started) / 1000,
        };
      } catch (error) {
        if (!(error instanceof TreeChanged)) throw error;
        // A pinned generation never changes: no build may commit into it.
        if (given.generation !== undefined) throw new Error('bug: a pinned generation of the tree changed', { cause: error });
        if (attempt === MAX_ATTEMPTS) throw keptChanging(options.out);
      }
    }
  } finally {
    remote.close();
  }
}

/** Exit 5 for a publish beside a writer that kept committing into the tree: what to do depends on who writes. */
function keptChanging(out: string): SnapshotError {
  const writer = OutDirLock.holderOf(out);
  const hint =
    writer?.command === 'watch'
      ? `the watcher pid ${writer.pid} rewrites this tree every cycle: let it publish (run it with --publish), which publishes a pinned generation of its tree, or publish a copy no process writes`
      : 'publish after the build has finished (build, then publish, one after the other), not beside it';
  return outputError(`the tree in ${out} changed under ${MAX_ATTEMPTS} publishes in a row: another process kept committing into it`, hint);
}

async function publishOnce(remote: Remote, reader: TreeReader, options: Run, scope: PublishScope): Promise<Outcome> {
  if (scope.shard !== undefined) await claimShardLayout(remote, scope.shard);
  // The bucket already holds this tree: known from two headers, no million entries read.
  const held = options.full ? undefined : await bucketHoldsTree(remote, reader, scope);
  // A shard heals its own part: one gone from the bucket (or never whole) is sent again, whatever the record says.
  const heldPartWhole = held === undefined || scope.shard === undefined || (await partIsWhole(remote, scope.shard));
  if (held !== undefined && heldPartWhole) return joinedOutcome(remote, quietOutcome(remote, held, options), scope, options);
  const tree = readLocalTree(reader, options.waitMs ?? DEFAULT_COMMIT_WAIT_MS);
  // Found broken on the quiet path already: not looked at twice.
  const partBroken = scope.shard !== undefined && (!heldPartWhole || !(await partIsWhole(remote, scope.shard, tree)));
  const first = options.full ? undefined : forgetPartIf(partBroken, await readRecord(remote, scope));
  // Only a prefix without a record of whole trees may be a sharded one: no request otherwise.
  if (scope.shard === undefined && first?.stateEtag === undefined) await assertNotSharded(remote);
  // Decided before the lease is taken, so a quiet check, a dry run and a refusal write nothing.
  let firstPlan: PublishPlan | undefined;
  if (first?.live !== undefined) {
    const plan = (firstPlan = planPublish(tree, first.live));
    guardDeletions(plan, options, remote.where);
    if (options.dryRun || (namesTree(first, tree.digest) && isEmptyPlan(plan))) return outcomeOf(remote, tree, plan, 'state', options);
    assertPresent(tree, plan);
  } else {
    if (options.dryRun) return dryRun(remote, tree, options, scope.shard);
    assertPresent(tree, { profiles: tree.profiles.keys(), files: tree.files.keys() });
  }
  const lock = await Lease.acquire(remote, scope.lock, leaseOptionsOf(options), lockWaitOf(options), options.lockSightings);
  try {
    // A lease lost mid-publish: cut the requests in flight (their retries meet the fence), so none
    // lands after another publisher has taken over.
    lock.keepRenewing(() => remote.client.destroy());
    remote.fence = () => lock.assertHeld();
    const record = forgetPartIf(partBroken, await readRecord(remote, scope, first));
    // The record unchanged since it was read (both conditional GETs answered 304): its plan stands.
    const outcome = await publishHeld(remote, tree, options, record, record === first ? firstPlan : undefined);
    if (lock.unfenced) outcome.notices.push(unfencedNotice(remote));
    return outcome;
  } catch (error) {
    // Requests cut short by a lost lease fail in many ways; the loss is what to report.
    if (!lock.held && !(error instanceof SnapshotError && error.kind !== 'remote')) lock.assertHeld();
    throw error;
  } finally {
    remote.fence = undefined;
    await lock.release();
  }
}

/** The record, believed to hold no part of the list when the shard's part is broken: the plan then sends it. */
function forgetPartIf<R extends RemoteRecord | undefined>(broken: boolean, record: R): R {
  if (broken) for (const path of LIST_FILES) record?.live?.files.delete(path);
  return record;
}

/** The publish proper, under the lock: decide, guard, intent, upload, delete, state. */
async function publishHeld(
  remote: Remote,
  tree: LocalTree,
  options: Run,
  record: RemoteRecord,
  planned: PublishPlan | undefined,
): Promise<Outcome> {
  const live = options.full ? undefined : record.live;
  const compared = live ?? (await listLive(remote, tree, record.scope.shard, compareProgress(tree, options)));
  // At a million profiles a plan takes most of a second: not made twice over the same record.
  const plan = live !== undefined && planned !== undefined ? planned : planPublish(tree, compared);
  guardDeletions(plan, options, remote.where);
  const outcome = outcomeOf(remote, tree, plan, live ? 'state' : 'listing', options);
  // Nothing to write, and the state already says so (a listing leaves a state for next time).
  if (live !== undefined && namesTree(record, tree.digest) && isEmptyPlan(plan)) return outcome;
  assertPresent(tree, plan);
  // Always replaced, even when empty: the state written last names it, which marks any earlier one done.
  const base = live ? record.base : NO_BASE;
  const checkpoints = await Checkpoints.begin(remote, tree, plan, compared, record, base, options.checkpointProfiles);
  if (!checkpoints.writesAny) collectAfterLettingGo('planned', keepOnlyDeletions(compared, plan));
  outcome.bytes = await sendInOrder(remote, tree, plan, options, record.scope, checkpoints);
  // The lists went up last: their part buffers are not held while the state is made.
  collectAfterLettingGo('sent', remote.letGoOfPartBuffers());
  // A shard's removed users leave the joined list before their objects go; until then they stay live.
  const deferred = await joinBeforeDeleting(remote, outcome, record.scope, options, plan);
  const deleteProfiles = [...plan.deleteProfiles.keys()].filter((name) => !deferred.has(name));
  const deletions = [...deleteProfiles.flatMap(profilePaths), ...plan.deleteKeys];
  let deleted = 0;
  await deleteObjects(
    remote,
    deletions,
    remote.options.concurrency,
    (count) => options.onProgress?.({ phase: 'delete', done: (deleted += count), total: deletions.length, bytes: outcome.bytes }),
    options.later,
  );
  await writeState(remote, checkpoints.record, checkpoints.id, liveProfiles(tree, plan, deferred), hashes(tree.files), {
    // A state that still holds deferred profiles does not name the tree: the next publish deletes them.
    tree: deferred.size === 0 ? tree.digest : undefined,
    profiles: tree.profiles.size + deferred.size,
    files: tree.files.size,
  });
  return outcome;
}

/**
 * After the plan, what was live is read again only by checkpoints, which merge all of it; the plan
 * keeps the rows of its deletions (with the hashes a shard's deferred ones stay live with). A
 * publish that writes no checkpoint lets go of the rest: the state is not held through the
 * uploads. Returns the bytes it let go of.
 */
function keepOnlyDeletions(live: LiveSet, plan: PublishPlan): number {
  const held = live.profiles.byteLength;
  live.profiles = plan.deleteProfiles;
  return held - live.profiles.byteLength;
}

/** The tree's profiles, and those whose deletion waits for the joined list (with the hash they are live with). */
function liveProfiles(tree: LocalTree, plan: PublishPlan, deferred: ReadonlySet<string>): RowSource {
  if (deferred.size === 0) return tree.profiles;
  const kept = new TableBuilder();
  forEachRow(plan.deleteProfiles, (table, row) => {
    if (deferred.has(table.name(row))) kept.addRow(table, row);
  });
  return union(kept.build(), tree.profiles);
}

/** Progress of the listing a publish with no trusted record compares with: objects listed, of about the tree's. */
function compareProgress(tree: LocalTree, options: PublishOptions): ((listed: number) => void) | undefined {
  const onProgress = options.onProgress;
  if (onProgress === undefined) return undefined;
  const total = tree.profiles.size * PROFILE_DIRS.length + tree.files.size;
  return (listed) => onProgress({ phase: 'compare', done: listed, total: Math.max(total, listed), bytes: 0 });
}

/** A dry run without a trusted record: the plan against a listing; nothing written, no lease taken. */
async function dryRun(remote: Remote, tree: LocalTree, options: PublishOptions, shard: Slice | undefined): Promise<Outcome> {
  const plan = planPublish(tree, await listLive(remote, tree, shard));
  guardDeletions(plan, options, remote.where);
  return outcomeOf(remote, tree, plan, 'listing', options);
}

function* hashes(entries: Map<string, string>): Iterable<readonly [string, string]> {
  for (const [key, entry] of entries) yield [key, entryHash(entry)];
}
