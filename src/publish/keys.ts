/**
 * Every key the tool keeps under its own folder of a prefix, `.profile-snapshot/` (relative to the
 * prefix; no CDN route serves that folder), and the scope that picks a publish's own:
 *
 *   remote-state, remote-intent          the record of a whole tree's publish (record/format.ts)
 *   lock, leader, compose                the prefix's leases (lease/lease.ts)
 *   shards/layout                        the prefix's shard count, created by its first shard
 *   shards/joined                        which part of each shard the joined list holds
 *   shards/<i>-of-<n>/remote-state, ...  a shard's own record and leases (lock, leader)
 *   shards/<i>-of-<n>/part, parts/       a shard's part index and its parts of the list
 *
 * A whole tree keeps its record and lock at the top, as it always has; a shard's tree (`--shard
 * i/n`) keeps them in its own folder, so the publishers of different shards never wait for each
 * other.
 */
import { STATE_DIR } from '../core/layout.js';
import type { Slice } from '../core/slice.js';

export const REMOTE_STATE = `${STATE_DIR}/remote-state`;
export const REMOTE_INTENT = `${STATE_DIR}/remote-intent`;

/** A lease's object below `.profile-snapshot/`: the prefix's lock and leader, a shard's own, and the composition's. */
export type LeaseName = 'lock' | 'leader' | 'compose' | `shards/${string}/${'lock' | 'leader'}`;
export const leaseKey = (name: LeaseName) => `${STATE_DIR}/${name}`;

/** Below STATE_DIR: the shards' folders, the layout and the composition's record. */
const SHARDS = 'shards';
export const SHARD_LAYOUT = `${STATE_DIR}/${SHARDS}/layout`;
/** The last joined list: which part of each shard it holds. */
export const JOINED = `${STATE_DIR}/${SHARDS}/joined`;

/** A shard's folder below STATE_DIR: `shards/<i>-of-<n>`. */
export const shardFolder = ({ index, count }: Slice): `shards/${string}` => `${SHARDS}/${index}-of-${count}`;
/** A shard's part index: which objects hold its part of the list, and their versions. */
export const partIndexKey = (shard: Slice) => `${STATE_DIR}/${shardFolder(shard)}/part`;
/** The folder of a shard's part objects. */
export const partsFolder = (shard: Slice) => `${STATE_DIR}/${shardFolder(shard)}/parts/`;

/** Where a publish of a whole tree, or of one shard, keeps its record and takes its lock. */
export interface PublishScope {
  /** The shard the publish brings; undefined: a whole tree. */
  shard: Slice | undefined;
  /** The record's objects (record/format.ts), relative to the prefix. */
  state: string;
  intent: string;
  /** The lease publishers of this scope take turns through. */
  lock: LeaseName;
  /** The lease watchers publishing this scope take turns to lead through (watch/leadership.ts). */
  leader: LeaseName;
}

/** The scope of a publish of `shard` (undefined: of a whole tree). */
export function scopeOf(shard: Slice | undefined): PublishScope {
  if (shard === undefined) return { shard, state: REMOTE_STATE, intent: REMOTE_INTENT, lock: 'lock', leader: 'leader' };
  const folder = shardFolder(shard);
  const state = `${STATE_DIR}/${folder}/remote-state`;
  return { shard, state, intent: `${STATE_DIR}/${folder}/remote-intent`, lock: `${folder}/lock`, leader: `${folder}/leader` };
}

export const WHOLE_TREE: PublishScope = Object.freeze(scopeOf(undefined));
