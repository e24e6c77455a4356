/**
 * What one attempt of a publish reports (the report's body, publish.ts adds the counts), and what it
 * tells the operator in its notices.
 */
import { CREATORS_FILE, PROFILE_DIRS } from '../core/layout.js';
import type { Remote } from './bucket/client.js';
import { describeTarget } from './bucket/target.js';
import type { LocalTree } from './plan/local.js';
import { deleteCount, isEmptyPlan, uploadCount, type PublishPlan } from './plan/plan.js';
import type { PublishOptions, PublishReport } from './report.js';

export type Outcome = Omit<PublishReport, 'attempts' | 'requests' | 'retries' | 'sentLater' | 'seconds'>;

/** The outcome of a plan: what it puts, deletes and leaves, before anything is sent. */
export function outcomeOf(
  remote: Remote,
  tree: LocalTree,
  plan: PublishPlan,
  compared: Outcome['compared'],
  options: PublishOptions,
): Outcome {
  return {
    ...outcomeHead(remote, tree.outDir, options),
    compared,
    changed: !isEmptyPlan(plan),
    profiles: { put: plan.profiles.length, deleted: plan.deleteProfiles.size },
    objects: { put: uploadCount(plan), deleted: deleteCount(plan), unchanged: plan.unchanged },
    list: plan.listFiles.includes(CREATORS_FILE),
  };
}

/** The outcome of a quiet check that found the bucket holding this very tree (record/quiet.ts). */
export function quietOutcome(remote: Remote, held: { profiles: number; files: number }, options: PublishOptions): Outcome {
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

export const unfencedNotice = (remote: Remote) =>
  `${remote.where} ignores conditional writes (accepted with --single-writer): nothing keeps two publishers apart, so only one may ever publish to this prefix`;
