/**
 * A lease as its readers see it: the object's JSON, its ETag and age on the bucket's clock, and what a
 * waiter saw of it over time (`Sightings`), from which it tells when an unrenewed lease expires.
 */
import type { LeaseName } from '../keys.js';
import type { LeaseHolder } from './holder.js';
import { monotonicMs } from './keeper.js';

/** The lease object's JSON. */
export interface LeaseBody {
  tool: 'profile-snapshot';
  lease: LeaseName;
  holder: LeaseHolder;
  acquiredAt: string;
  renewedAt: string;
  renewals: number;
  ttlSeconds: number;
  released: boolean;
  /**
   * Whether the store was proven to refuse a second conditional create, found to accept it (and the
   * holder accepted that: --single-writer), or not checked yet.
   */
  preconditions: 'proven' | 'ignored' | 'unproven';
}

/** A lease as a reader saw it. */
export interface LeaseView {
  body: LeaseBody;
  etag: string;
  /** Since its last write, on the server's clock; undefined when the server gave no dates. */
  ageMs: number | undefined;
}

/**
 * HTTP dates have whole seconds: an age read from them may be up to a second too large, so a lease
 * counts as expired only once it reads older than its TTL by more than that.
 */
const DATE_SLACK_MS = 1000;

/** A `Sightings` as plain data (its clock, monotonicMs, is the same in every thread of the process). */
export interface SeenVersion {
  etag: string | undefined;
  writtenAt: number;
  dated: boolean;
}

/**
 * What a waiter saw of a lease: since when (its own monotonic clock) the version it last saw has
 * stood unchanged. A version first seen already old by the bucket's clock counts from its last write,
 * not from the first look: a standby that saw the leader's lease for a TTL, or a lease the server says
 * was last written a while ago, is not waited out a second time.
 */
export class Sightings {
  private etag: string | undefined;
  /** When the version was last written, estimated on this process's monotonic clock. */
  private writtenAt = 0;
  /** Whether that estimate came from the bucket's whole-second dates (then it may be a second early). */
  private dated = false;

  /** What was seen, as plain data, for a waiter in another thread to go on from (`adopt`). */
  toJSON(): SeenVersion {
    return { etag: this.etag, writtenAt: this.writtenAt, dated: this.dated };
  }

  /** Goes on from what a waiter in another thread of this process saw (its `toJSON`). */
  adopt(seen: SeenVersion): void {
    this.etag = seen.etag;
    this.writtenAt = seen.writtenAt;
    this.dated = seen.dated;
  }

  /** Whether the lease may be taken: absent, released, this holder's own, or unrenewed for a TTL. */
  isFree(view: LeaseView, holder: LeaseHolder): boolean {
    if (view.body.released || view.body.holder.id === holder.id) return true;
    return this.expiresInMs(view) < 0;
  }

  /** How long until the version `view` shows expires, unrenewed (negative once it has). */
  expiresInMs(view: LeaseView): number {
    const now = monotonicMs();
    const ttlMs = view.body.ttlSeconds * 1000;
    if (view.etag !== this.etag) {
      // A new version: the holder was alive when it wrote it. Only the latest is remembered.
      this.etag = view.etag;
      this.writtenAt = now - (view.ageMs ?? 0);
      this.dated = view.ageMs !== undefined;
    } else if (view.ageMs !== undefined && now - view.ageMs < this.writtenAt) {
      // The bucket's clock may tell of an older write than the first look did (its dates have whole seconds).
      this.writtenAt = now - view.ageMs;
      this.dated = true;
    }
    // Without dates the version was written before this process first saw it: no rounding to allow for.
    return this.writtenAt + ttlMs + (this.dated ? DATE_SLACK_MS : 0) - now;
  }
}

/** A lease object's JSON as read: one not ours, or damaged, reads as held by an unknown holder. */
export function parseBody(bytes: Uint8Array, name: LeaseName): LeaseBody {
  try {
    const body = JSON.parse(Buffer.from(bytes).toString('utf8')) as LeaseBody;
    if (body.tool === 'profile-snapshot' && typeof body.ttlSeconds === 'number' && typeof body.holder?.id === 'string') return body;
  } catch {
    // not ours, or damaged: below
  }
  // Unreadable: a lease of unknown holder that expires like any other once left alone.
  const unknown: LeaseHolder = { host: 'unknown', pid: 0, id: `unreadable-${name}`, startedAt: '' };
  return {
    tool: 'profile-snapshot',
    lease: name,
    holder: unknown,
    acquiredAt: '',
    renewedAt: '',
    renewals: 0,
    ttlSeconds: 60,
    released: false,
    preconditions: 'unproven',
  };
}

/** How old a lease is, in words: "renewed 3 s ago, TTL 60 s". */
export function describeAge(view: LeaseView): string {
  const age = view.ageMs === undefined ? 'age unknown' : `renewed ${Math.round(view.ageMs / 1000)} s ago`;
  return `${age}, taken at ${view.body.acquiredAt}, TTL ${view.body.ttlSeconds} s`;
}
