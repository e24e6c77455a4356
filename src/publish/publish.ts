/**
 * `publish`: brings a bucket (S3, R2, GCS, MinIO) to exactly the built tree, touching only what
 * changed. Readers of the bucket never see a broken API, whenever the publish stops:
 *
 *   1. decide (tree against what is live: the remote state, or a listing) and apply the deletion
 *      guard, before anything is written;
 *   2. record the intent (what may change), so a publish killed half-way is finished by the next;
 *   3. upload new and changed profiles and documents, then the creators list (so every user the live
 *      list names has its profile objects), then delete what the tree no longer has;
 *   4. record the new state.
 *
 * Steps 2-4 run under the prefix's lock lease (lease.ts), and the record is written only over the
 * version read (record.ts): several publishers on one prefix take turns, and none overwrites what
 * another recorded. A quiet check (the record already names this tree) takes no lease; when the
 * state names the manifest's own digest it reads only the two headers (quiet.ts).
 *
 * A request that still fails after the SDK's attempts is sent again later in the publish (later.ts);
 * any other failure stops the publish where it is: nothing is deleted after a failed upload.
 *
 * The tree is read as it is, or (the watcher's own publish) as a generation its writer pinned
 * (output/pin.ts), which later commits leave alone however long the publish runs.
 */
import { fstatSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { outputError, SnapshotError } from '../core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE, PROFILE_DIRS, resolveOutDir } from '../core/layout.js';
import { entryHash, manifestStamp, stampOf } from '../output/manifest.js';
import { OutDirLock } from '../output/lock.js';
import { liveTree, type TreeReader } from '../output/pin.js';
import { DEFAULT_COMMIT_WAIT_MS } from '../output/settled.js';
import { Remote } from './bucket/client.js';
import type { PublishOptions, PublishReport } from './report.js';
import { Lease, thisHolder, type LeaseOptions } from './lease/lease.js';
import { DEFAULT_LEASE_TTL_MS, DEFAULT_LOCK_TIMEOUT_MS } from './lease/defaults.js';
import { treeShard, fileStampOf, profileDocument, profilePaths, readLocalTree, type LocalTree } from './plan/local.js';
import { deleteCount, guardDeletions, isEmptyPlan, LIST_FILES, planPublish, uploadCount, type PublishPlan } from './plan/plan.js';
import { listLive } from './plan/reconcile.js';
import { bucketHoldsTree } from './record/quiet.js';
import { namesTree, readRecord, writeState, type RemoteRecord } from './record/record.js';
import { NO_BASE } from './record/format.js';
import { UNKNOWN, type LiveSet } from './plan/live-set.js';
import { Checkpoints } from './record/checkpoint.js';
import { joinShard } from './shards/join.js';
import { partIsWhole, publishPart } from './shards/part.js';
import { assertNotSharded, assertShardWriters, claimShardLayout } from './shards/layout.js';
import { scopeOf, type PublishScope } from './keys.js';
import { formatSlice, type Slice } from '../core/slice.js';
import { describeTarget } from './bucket/target.js';
import { closeFile, deleteObjects, putFile } from './bucket/upload.js';
import { Later } from './bucket/later.js';

/** A build committed while the publish read the tree: start over on the new one. */
class TreeChanged extends Error {}

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

type Outcome = Omit<PublishReport, 'attempts' | 'requests' | 'retries' | 'sentLater' | 'seconds'>;

/** A publish's options as its steps take them: the out dir absolute, and its rounds of sending again later. */
type Run = PublishOptions & { later: Later };

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
    assertPresent(tree, { profiles: [...tree.profiles.keys()], files: [...tree.files.keys()] });
  }
  const lockWaitMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const lock = await Lease.acquire(remote, scope.lock, leaseOptions(options), lockWaitMs, options.lockSightings);
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
  outcome.bytes = await upload(remote, tree, plan, options, record.scope, checkpoints);
  // A shard's removed users leave the joined list before their objects go; until then they stay live.
  const deferred = await joinBeforeDeleting(remote, outcome, record.scope, options, plan);
  const deleteProfiles = deferred.size === 0 ? plan.deleteProfiles : plan.deleteProfiles.filter((name) => !deferred.has(name));
  const deletions = [...deleteProfiles.flatMap(profilePaths), ...plan.deleteKeys];
  let deleted = 0;
  await deleteObjects(
    remote,
    deletions,
    remote.options.concurrency,
    (count) => options.onProgress?.({ phase: 'delete', done: (deleted += count), total: deletions.length, bytes: outcome.bytes }),
    options.later,
  );
  await writeState(remote, checkpoints.record, checkpoints.id, liveProfiles(tree, live, deferred), hashes(tree.files), {
    // A state that still holds deferred profiles does not name the tree: the next publish deletes them.
    tree: deferred.size === 0 ? tree.digest : undefined,
    profiles: tree.profiles.size + deferred.size,
    files: tree.files.size,
  });
  return outcome;
}

/** The tree's profiles, and those whose deletion waits for the joined list (with the hash they are live with). */
function* liveProfiles(tree: LocalTree, live: LiveSet | undefined, deferred: ReadonlySet<string>): Iterable<[string, string]> {
  yield* hashes(tree.profiles);
  for (const name of deferred) yield [name, live?.profiles.get(name) ?? UNKNOWN];
}

/**
 * For a shard: joins the creators list with the part just published, and returns the removed users
 * whose objects must stay because the live list may still name them (the list could not be joined).
 */
async function joinBeforeDeleting(
  remote: Remote,
  outcome: Outcome,
  scope: PublishScope,
  options: Run,
  plan: PublishPlan,
): Promise<ReadonlySet<string>> {
  if (scope.shard === undefined) return new Set();
  const holdsPart = await joinShardList(remote, outcome, scope.shard, options);
  if (holdsPart || options.dryRun) return new Set();
  outcome.shard!.deferredProfiles = plan.deleteProfiles.length;
  return new Set(plan.deleteProfiles);
}

/** A shard's outcome, once the creators list holds its current part (or could not be joined yet). */
async function joinedOutcome(remote: Remote, outcome: Outcome, scope: PublishScope, options: Run): Promise<Outcome> {
  if (scope.shard !== undefined) await joinShardList(remote, outcome, scope.shard, options);
  return outcome;
}

/** Joins the list for a shard's publish (join.ts), noting it in the outcome; whether the list holds the shard's part. */
async function joinShardList(remote: Remote, outcome: Outcome, shard: Slice, options: Run): Promise<boolean> {
  outcome.shard = { shard: formatSlice(shard), join: undefined, listHoldsShard: false, deferredProfiles: 0 };
  if (options.dryRun) return false;
  const waitMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const joined = await joinShard(remote, shard, { lease: leaseOptions(options), waitMs, later: options.later }).catch((error: unknown) => {
    if (!(error instanceof SnapshotError && error.kind === 'prefixHeld')) throw error;
    // This shard's own lock lost: the publish fails (the fence throws). Else the compose lease was
    // held or taken over: the shard's publish stands, and its next publish joins the list.
    remote.fence?.();
    outcome.shard!.listBehind = error.message;
    outcome.notices.push(`the creators list was not joined: ${error.message} (this shard's next publish joins it)`);
    return undefined;
  });
  if (joined === undefined) return false;
  const { report, holdsPart } = joined;
  outcome.shard.join = report;
  outcome.shard.listHoldsShard = holdsPart;
  if (report.missing.length > 0) {
    const names = report.missing.map((index) => `${index}/${shard.count}`).join(', ');
    outcome.notices.push(`the creators list was not joined: ${names} published no part yet (the last shard to publish joins it)`);
  }
  if (report.broken.length > 0) {
    const names = report.broken.map((index) => `${index}/${shard.count}`).join(', ');
    outcome.notices.push(
      `the creators list was not joined: the part of ${names} is gone from the bucket (that shard's next publish sends it again)`,
    );
  }
  return holdsPart;
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

function outcomeOf(remote: Remote, tree: LocalTree, plan: PublishPlan, compared: Outcome['compared'], options: PublishOptions): Outcome {
  return {
    ...outcomeHead(remote, tree.outDir, options),
    compared,
    changed: !isEmptyPlan(plan),
    profiles: { put: plan.profiles.length, deleted: plan.deleteProfiles.length },
    objects: { put: uploadCount(plan), deleted: deleteCount(plan), unchanged: plan.unchanged },
    list: plan.listFiles.includes(CREATORS_FILE),
  };
}

/** The outcome of a quiet check that found the bucket holding this very tree (quiet.ts). */
function quietOutcome(remote: Remote, held: { profiles: number; files: number }, options: PublishOptions): Outcome {
  return {
    ...outcomeHead(remote, options.out, options),
    compared: 'state',
    changed: false,
    profiles: { put: 0, deleted: 0 },
    objects: { put: 0, deleted: 0, unchanged: held.profiles * PROFILE_DIRS.length + held.files },
    list: false,
  };
}

/** What every outcome says whatever the plan: where from, where to, and nothing sent yet. */
const outcomeHead = (remote: Remote, out: string, options: PublishOptions) => ({
  out,
  to: describeTarget(remote.options),
  where: remote.where,
  dryRun: Boolean(options.dryRun),
  bytes: 0,
  notices: [] as string[],
});

const unfencedNotice = (remote: Remote) =>
  `${remote.where} ignores conditional writes (accepted with --single-writer): nothing keeps two publishers apart, so only one may ever publish to this prefix`;

function leaseOptions(options: PublishOptions): LeaseOptions {
  return {
    ttlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    singleWriter: Boolean(options.singleWriter),
    holder: thisHolder(),
  };
}

function* hashes(entries: Map<string, string>): Iterable<[string, string]> {
  for (const [key, entry] of entries) yield [key, entryHash(entry)];
}

/** A document the plan uploads is missing: the tree changed under us, or it is damaged (exit 5). */
function missing(tree: LocalTree, path: string): Error {
  if (manifestStamp(tree.reader.root) !== tree.manifestStamp) return new TreeChanged();
  return outputError(
    `${tree.outDir} is not publishable: ${path} is missing although the manifest lists it`,
    'rebuild (profile-snapshot build --full), then publish again',
  );
}

/** Checked before anything is written: a tree missing documents is never half published. */
function assertPresent(tree: LocalTree, plan: Pick<PublishPlan, 'profiles' | 'files'>): void {
  for (const name of plan.profiles) if (!tree.reader.has(profileDocument(name))) throw missing(tree, profileDocument(name));
  for (const path of plan.files) if (!tree.reader.has(path)) throw missing(tree, path);
}

/** Profiles and documents first, the creators list and its variant last. Returns the bytes uploaded. */
async function upload(
  remote: Remote,
  tree: LocalTree,
  plan: PublishPlan,
  options: Run,
  scope: PublishScope,
  checkpoints: Checkpoints,
): Promise<number> {
  const total = uploadCount(plan);
  let done = 0,
    bytes = 0;
  const progress = (count: number) => options.onProgress?.({ phase: 'upload', done: (done += count), total, bytes });
  const send = async (path: string, keys: readonly string[]) => {
    const fd = tree.reader.open(path);
    if (fd === undefined) throw missing(tree, path);
    try {
      // Read after the await: `bytes += await ...` would add to the total as it was before the upload.
      const sent = await putFile(remote, keys, fd);
      bytes += sent;
      progress(keys.length);
    } finally {
      closeFile(fd);
    }
  };
  const concurrency = remote.options.concurrency;
  // In chunks, each followed by a checkpoint of the record but the last: a takeover re-sends only what came after.
  for (let from = 0; from < plan.profiles.length; from += checkpoints.every) {
    const chunk = plan.profiles.slice(from, from + checkpoints.every);
    await options.later.inPool(chunk, concurrency, (name) => send(profileDocument(name), profilePaths(name)));
    if (from + chunk.length < plan.profiles.length) await checkpoints.after(chunk);
  }
  await options.later.inPool(plan.files, concurrency, (path) => send(path, [path]));
  if (scope.shard !== undefined && plan.listFiles.length > 0) {
    // A shard's list is a part of the joined one (parts.ts): never uploaded as the list itself.
    await options.later.once(async () => {
      const part = await publishPart(remote, tree, scope.shard!, checkpoints.id);
      bytes += part.bytes;
    });
    progress(plan.listFiles.length);
    return bytes;
  }
  for (const path of plan.listFiles)
    await options.later.once(() =>
      sendListFile(remote, tree, path, (size) => {
        bytes += size;
        progress(1);
      }),
    );
  return bytes;
}

/**
 * The creators list or its gzip variant (stored with `Content-Encoding: gzip`), as the manifest
 * describes it: a file written by a later build is not ours to send.
 */
async function sendListFile(remote: Remote, tree: LocalTree, path: string, sent: (bytes: number) => void): Promise<void> {
  const fd = tree.reader.open(path);
  if (fd === undefined) throw missing(tree, path);
  try {
    const expected = fileStampOf(tree, path);
    const stats = fstatSync(fd, { bigint: true });
    if (expected !== undefined && expected !== stampOf(stats)) {
      if (manifestStamp(tree.reader.root) !== tree.manifestStamp) throw new TreeChanged();
      throw outputError(
        `${tree.outDir}/${path} was changed since the build wrote it`,
        'rebuild (profile-snapshot build --full), then publish again',
      );
    }
    sent(await putFile(remote, [path], fd, path === CREATORS_GZIP_FILE ? 'gzip' : undefined));
  } finally {
    closeFile(fd);
  }
}
