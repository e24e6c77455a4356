/**
 * What a publish is asked and what it answers: types only, so that the CLI and the watcher name them
 * without loading the AWS SDK (publish.ts is loaded only to publish).
 */
import type { Slice } from '../core/slice.js';
import type { TreeReader } from '../output/pin.js';
import type { RemoteOptions, RequestCounts } from './bucket/client.js';
import type { Sightings } from './lease/view.js';
import type { JoinReport } from './shards/join.js';

export interface PublishOptions {
  out: string;
  /**
   * The generation of the tree to publish: one its writer pinned (a watcher publishing its own tree,
   * output/pin.ts), which no later commit changes. Undefined: the out dir as it is, started over
   * when a build commits into it meanwhile.
   */
  generation?: TreeReader | undefined;
  remote: RemoteOptions;
  /** Objects a publish may delete; default 10% of the live profile objects, at least 100. */
  maxDeletes?: number | undefined;
  /** No deletion guard. */
  force?: boolean | undefined;
  /** Ignore the remote state: list the bucket and compare by content. */
  full?: boolean | undefined;
  /** Decide and report, write nothing. */
  dryRun?: boolean | undefined;
  /** How long to wait for a running build's commit to end (default DEFAULT_COMMIT_WAIT_MS). */
  waitMs?: number | undefined;
  /** How long to wait for another publisher's lease on the prefix (default DEFAULT_LOCK_TIMEOUT_MS), then exit 8. */
  lockTimeoutMs?: number | undefined;
  /** The lease's time to live (default DEFAULT_LEASE_TTL_MS). */
  leaseTtlMs?: number | undefined;
  /** Accept a store that ignores conditional writes: nothing then keeps two publishers apart. */
  singleWriter?: boolean | undefined;
  /** What this process already saw of the prefix's lock (a standby watcher looks at it each cycle). */
  lockSightings?: Sightings | undefined;
  /**
   * The shard the tree must be (`--shard`): a tree of another shard, or a whole tree, is refused.
   * Undefined: the tree is published as what it is (its manifest says whether it is a shard).
   */
  shard?: Slice | undefined;
  /** Profiles sent between two checkpoints of the record (record/checkpoint.ts; default 100,000). */
  checkpointProfiles?: number | undefined;
  /** Pauses before each round of sending again what failed after the SDK's attempts (bucket/later.ts); tests shorten them. */
  laterPausesMs?: readonly number[] | undefined;
  onProgress?: ((progress: PublishProgress) => void) | undefined;
}

export interface PublishProgress {
  /** compare: listing the prefix (no record to trust: `done` objects listed, of about `total`); then upload, delete. */
  phase: 'compare' | 'upload' | 'delete';
  done: number;
  total: number;
  /** Bytes uploaded so far by this publish. */
  bytes: number;
}

export interface PublishReport {
  out: string;
  to: string;
  /** Bucket and endpoint, as in messages (no credentials). */
  where: string;
  dryRun: boolean;
  /** How what is live was found: the remote state, or a listing of the prefix. */
  compared: 'state' | 'listing';
  /** Whether anything was (or, in a dry run, would be) written. */
  changed: boolean;
  profiles: { put: number; deleted: number };
  objects: { put: number; deleted: number; unchanged: number };
  /** Whether the creators list was uploaded. */
  list: boolean;
  bytes: number;
  requests: RequestCounts;
  retries: number;
  /** Requests that failed after the SDK's attempts and were sent again later in this publish. */
  sentLater: number;
  /** More than 1 when a build committed meanwhile and the publish started over on the new tree. */
  attempts: number;
  /** Things the operator should know, e.g. a store that ignores conditional writes (accepted with --single-writer). */
  notices: string[];
  /** The shard published (`i/n`), and what became of the joined creators list; undefined for a whole tree. */
  shard?:
    | {
        shard: string;
        join: JoinReport | undefined;
        listHoldsShard: boolean;
        deferredProfiles: number;
        /** Why the list could not be joined at all (another composer held it past --lock-timeout, or took it over). */
        listBehind?: string | undefined;
      }
    | undefined;
  seconds: number;
}
