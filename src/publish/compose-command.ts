/**
 * `compose`: joins the creators list of a sharded prefix from every shard's part (shards/join.ts),
 * as each shard's publish does after writing its part; fails (exit 11) while a shard has no part yet.
 */
import { performance } from 'node:perf_hooks';
import { shardCountError, shardLayoutError } from '../core/errors.js';
import { Remote, type RemoteOptions, type RequestCounts } from './bucket/client.js';
import { leaseOptionsOf, lockWaitOf } from './lease/defaults.js';
import { joinList, type JoinReport } from './shards/join.js';
import { readShardCount } from './shards/layout.js';

export interface ComposeOptions {
  remote: RemoteOptions;
  /** The shard count the prefix must have (exit 9 otherwise); undefined: whatever its layout says. */
  shards?: number | undefined;
  /** Join even when the live list already holds every current part. */
  force?: boolean | undefined;
  /** How long to wait for another composer (default DEFAULT_LOCK_TIMEOUT_MS), then exit 8. */
  lockTimeoutMs?: number | undefined;
  leaseTtlMs?: number | undefined;
  singleWriter?: boolean | undefined;
}

export interface ComposeReport extends JoinReport {
  where: string;
  shards: number;
  requests: RequestCounts;
  seconds: number;
}

/** Joins the list of the prefix `options.remote` names, or fails saying why (exit 9, 10, 11). */
export async function compose(options: ComposeOptions): Promise<ComposeReport> {
  const started = performance.now();
  const remote = await Remote.open(options.remote);
  try {
    const shards = await readShardCount(remote);
    if (shards === undefined) {
      throw shardLayoutError(
        `${remote.where} is not a sharded prefix: no shard was published there`,
        'publish the shards first (profile-snapshot publish --shard i/n)',
      );
    }
    if (options.shards !== undefined && options.shards !== shards) {
      throw shardCountError(`${remote.where} is split into ${shards} shards, not ${options.shards}`, `pass --shards ${shards}`);
    }
    const lease = leaseOptionsOf(options);
    const report = await joinList(remote, { count: shards, lease, waitMs: lockWaitOf(options), required: true, force: options.force });
    return { ...report, where: remote.where, shards, requests: { ...remote.counts }, seconds: (performance.now() - started) / 1000 };
  } finally {
    remote.close();
  }
}
