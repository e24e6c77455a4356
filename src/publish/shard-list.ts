/**
 * A shard's publish and the joined creators list: the list is joined with the part just published
 * (shards/join.ts), and a removed user's objects stay until the live list no longer names them. What
 * became of the list goes into the outcome, with a notice when it could not be joined.
 */
import { SnapshotError } from '../core/errors.js';
import { formatSlice, type Slice } from '../core/slice.js';
import type { Remote } from './bucket/client.js';
import type { PublishScope } from './keys.js';
import { leaseOptionsOf, lockWaitOf } from './lease/defaults.js';
import type { PublishPlan } from './plan/plan.js';
import type { Outcome } from './outcome.js';
import type { Run } from './run.js';
import { joinShard } from './shards/join.js';

/**
 * For a shard: joins the creators list with the part just published, and returns the removed users
 * whose objects must stay because the live list may still name them (the list could not be joined).
 */
export async function joinBeforeDeleting(
  remote: Remote,
  outcome: Outcome,
  scope: PublishScope,
  options: Run,
  plan: PublishPlan,
): Promise<ReadonlySet<string>> {
  if (scope.shard === undefined) return new Set();
  const holdsPart = await joinShardList(remote, outcome, scope.shard, options);
  if (holdsPart || options.dryRun) return new Set();
  outcome.shard!.deferredProfiles = plan.deleteProfiles.size;
  return new Set(plan.deleteProfiles.keys());
}

/** A shard's outcome, once the creators list holds its current part (or could not be joined yet). */
export async function joinedOutcome(remote: Remote, outcome: Outcome, scope: PublishScope, options: Run): Promise<Outcome> {
  if (scope.shard !== undefined) await joinShardList(remote, outcome, scope.shard, options);
  return outcome;
}

/** Joins the list for a shard's publish (shards/join.ts), noting it in the outcome; whether the list holds the shard's part. */
async function joinShardList(remote: Remote, outcome: Outcome, shard: Slice, options: Run): Promise<boolean> {
  outcome.shard = { shard: formatSlice(shard), join: undefined, listHoldsShard: false, deferredProfiles: 0 };
  if (options.dryRun) return false;
  const joined = await joinShard(remote, shard, {
    lease: leaseOptionsOf(options),
    waitMs: lockWaitOf(options),
    later: options.later,
  }).catch((error: unknown) => {
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
