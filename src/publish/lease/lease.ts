/**
 * A lease on the bucket prefix, kept in an object under `<prefix>/.profile-snapshot/` and taken and
 * renewed only by conditional writes, so at most one holder has it at a time:
 *
 *   - `lock`: held by whoever writes the prefix's objects now (one publish); every publish takes it.
 *   - `leader`: held by the one `watch --publish` that publishes; other watchers stand by.
 *
 * Taking: create it (`If-None-Match: *`), or replace a released or expired one (`If-Match` on the ETag
 * read). Renewing: replace it `If-Match` on the holder's own last ETag, every quarter of the TTL. A
 * lease is expired once the server's clock (its Date header) says it was last written more than a TTL
 * ago, or a waiter saw it unchanged for a TTL: a holder killed with `kill -9` blocks for one TTL at
 * most, and clocks of different machines are never compared.
 *
 * The holder stops writing on its own clock before any waiter can take over: it counts its lease valid
 * until three quarters of a TTL after its last successful renewal was sent (`assertHeld`), and the
 * publisher checks that before every request it sends (Remote.fence). Renewals run on a thread of
 * their own (keeper.ts). Who holds a lease is holder.ts; what its readers see of it, view.ts: a long build on the main thread does not let the lease lapse.
 */
import { prefixHeldError, remoteError, SnapshotError } from '../../core/errors.js';
import { leaseKey, type LeaseName } from '../keys.js';
import type { Remote } from '../bucket/client.js';
import { monotonicMs, RenewalThread, Validity, type LeaseHandoff } from './keeper.js';
import { readObject, writeObject, type WriteCondition } from '../bucket/objects.js';
import { provePreconditions } from '../bucket/preconditions.js';
import { describeHolder, type LeaseHolder } from './holder.js';
import { describeAge, parseBody, Sightings, type LeaseBody, type LeaseView } from './view.js';

export interface LeaseOptions {
  ttlMs: number;
  /** Accept a store that ignores conditional writes (only one writer ever). */
  singleWriter: boolean;
  holder: LeaseHolder;
}

/** A lease this process holds. */
export class Lease {
  private readonly validity: Validity;
  private lost: SnapshotError | undefined;
  private timer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private onLost: ((error: SnapshotError) => void) | undefined;
  /** Asked before each renewal: a reason to renew no more (the main thread stalled: heartbeat.ts), or undefined. */
  private stopWhen: () => SnapshotError | undefined = () => undefined;
  private renewing: Promise<void> | undefined;
  /** Renewals handed to the renewal thread (keeper.ts), and the lease's id there. */
  private kept: { thread: RenewalThread; id: number } | undefined;
  /** Writes of the lease object since it was taken or handed over: renewals and the release. */
  writes = 0;

  private constructor(
    private readonly remote: Remote,
    readonly name: LeaseName,
    private etag: string,
    private body: LeaseBody,
    private readonly options: LeaseOptions,
    validity: Validity,
  ) {
    this.validity = validity;
  }

  private static taken(remote: Remote, name: LeaseName, etag: string, body: LeaseBody, options: LeaseOptions, sentAt: number): Lease {
    const validity = new Validity();
    validity.untilMs = sentAt + validityMs(options.ttlMs);
    return new Lease(remote, name, etag, body, options, validity);
  }

  /** In the renewal thread: the lease the main thread handed over, over the validity they share. */
  static resume(remote: Remote, handoff: LeaseHandoff): Lease {
    const body = handoff.body as LeaseBody;
    const options = { ttlMs: handoff.ttlMs, singleWriter: handoff.singleWriter, holder: body.holder };
    return new Lease(remote, handoff.name as LeaseName, handoff.etag, body, options, new Validity(handoff.validity));
  }

  /** The lease's current holder, or undefined when there is no lease object. */
  static async look(remote: Remote, name: LeaseName): Promise<LeaseView | undefined> {
    const stored = await readObject(remote, leaseKey(name));
    if (stored === undefined || stored === 'unchanged') return undefined;
    const now = remote.serverNow();
    const ageMs = now === undefined || stored.modifiedMs === undefined ? undefined : Math.max(0, now - stored.modifiedMs);
    return { body: parseBody(stored.bytes, name), etag: stored.etag, ageMs };
  }

  /**
   * Takes the lease if it is free (absent, released, expired, or this holder's own); otherwise says
   * who holds it. `seen` remembers, across calls, since when each version was seen unchanged.
   */
  static async tryAcquire(
    remote: Remote,
    name: LeaseName,
    options: LeaseOptions,
    seen: Sightings = new Sightings(),
  ): Promise<Lease | LeaseView> {
    for (let attempt = 0; ; attempt++) {
      const view = await Lease.look(remote, name);
      if (view !== undefined && !seen.isFree(view, options.holder)) return view;
      // Started as the lease is taken, loading while it is written (see keepRenewing); a standby
      // that never leads never starts it.
      RenewalThread.shared();
      const sentAt = monotonicMs();
      const body = newBody(name, options, view);
      const etag = await writeObject(remote, leaseKey(name), JSON.stringify(body), 'application/json', takeCondition(view));
      if (etag !== 'refused') {
        const lease = Lease.taken(remote, name, etag, body, options, sentAt);
        await lease.checkPreconditions(view);
        return lease;
      }
      // Another taker won the race: look again (it holds the lease now, or released it at once).
      if (attempt >= 3) return (await Lease.look(remote, name)) ?? view!;
    }
  }

  /**
   * Takes the lease, waiting up to `waitMs` for its holder; then exit 8 naming the holder. `seen`:
   * what this process already saw of the lease (a standby watcher looks at it every cycle).
   */
  static async acquire(remote: Remote, name: LeaseName, options: LeaseOptions, waitMs: number, seen = new Sightings()): Promise<Lease> {
    const started = monotonicMs();
    for (let pause = 250; ; pause = Math.min(2000, pause * 2)) {
      const result = await Lease.tryAcquire(remote, name, options, seen);
      if (result instanceof Lease) return result;
      const left = started + waitMs - monotonicMs();
      if (left <= 0) throw heldError(remote, result, waitMs);
      // Looked at again as soon as it expires, not up to a pause later.
      const wait = Math.min(pause, left, seen.expiresInMs(result) + EXPIRY_MARGIN_MS);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** Throws once the lease may have passed to another holder: nothing more may be written under it. */
  assertHeld(): void {
    if (this.lost) throw this.lost;
    if (monotonicMs() > this.validity.untilMs) {
      this.lost = remoteError(
        `the ${this.name} lease on ${this.remote.where} was not renewed in time (its holder must stop writing)`,
        "check the network to the bucket and the machine's load; raise --lease-ttl if the process is paused (a stopped VM, SIGSTOP) longer than it allows",
      );
      throw this.lost;
    }
    if (this.validity.lost) {
      // Still valid by the clock, so the renewal thread found it taken over; its words arrive by message, maybe not yet.
      throw (this.lost = prefixHeldError(`the ${this.name} lease on ${this.remote.where} was taken over by another publisher`));
    }
  }

  get held(): boolean {
    return this.lost === undefined && !this.validity.lost && monotonicMs() <= this.validity.untilMs;
  }

  /**
   * Renews every quarter TTL until released, from the renewal thread when it runs (so a blocked main
   * thread does not let the lease lapse). `onLost` hears, once, of a lease taken over or not renewed
   * in time, the moment its validity ends: a quarter TTL before anyone may take over, time for the
   * holder to cut its requests in flight. `stopWhen`, asked before each renewal, may end them too.
   */
  keepRenewing(onLost: (error: SnapshotError) => void = () => undefined, stopWhen?: () => SnapshotError | undefined): void {
    this.onLost = onLost;
    if (stopWhen !== undefined) this.stopWhen = stopWhen;
    this.keepRenewingHere();
    this.armDeadline();
    const thread = RenewalThread.shared();
    void thread?.ready.then(() => this.handOver(thread));
  }

  /** Moves the renewals to the renewal thread, unless the lease was released or lost meanwhile. */
  private async handOver(thread: RenewalThread): Promise<void> {
    if (this.onLost === undefined || this.kept !== undefined) return;
    clearInterval(this.timer);
    // Never two renewals of one version: the thread starts from the version the last one wrote.
    await this.renewing;
    if (this.onLost === undefined || !this.held) return;
    this.keepRenewingIn(thread);
  }

  private keepRenewingHere(): void {
    this.timer = setInterval(
      () => {
        if (this.renewing !== undefined || !this.held) return;
        const stop = this.stopWhen();
        if (stop !== undefined) {
          this.lost = stop;
          return this.lose();
        }
        this.renewing = this.renew()
          .catch(() => (this.lost !== undefined ? this.lose() : undefined)) // else: tried again next tick, while still valid
          .finally(() => (this.renewing = undefined));
      },
      Math.max(50, this.options.ttlMs / 4),
    );
    this.timer.unref();
  }

  private keepRenewingIn(thread: RenewalThread): void {
    const handoff: LeaseHandoff = {
      remote: { ...this.remote.options, region: this.remote.region },
      name: this.name,
      etag: this.etag,
      body: this.body,
      ttlMs: this.options.ttlMs,
      singleWriter: this.options.singleWriter,
      validity: this.validity.buffer,
    };
    // From here the thread holds the lease's versions: this side reads only the shared validity.
    const id = thread.keep(handoff, {
      lost: (kind, message, hint) => {
        this.lost ??= new SnapshotError(kind, message, { hint });
        this.lose();
      },
    });
    this.kept = { thread, id };
  }

  /** Calls `lose` when the validity ends unrenewed (re-armed by each renewal). */
  private armDeadline(): void {
    clearTimeout(this.deadline);
    if (this.onLost === undefined) return;
    this.deadline = setTimeout(
      () => {
        if (this.held) return this.armDeadline();
        try {
          this.assertHeld();
        } catch {
          this.lose();
        }
      },
      Math.max(0, this.validity.untilMs - monotonicMs()) + 1,
    );
    this.deadline.unref();
  }

  /** Stops renewing, and tells the holder (once) that the lease is gone. */
  private lose(): void {
    clearInterval(this.timer);
    clearTimeout(this.deadline);
    this.validity.markLost();
    const onLost = this.onLost;
    this.onLost = undefined;
    onLost?.(this.lost!);
  }

  /** Replaces the lease over its own last version: refused means another holder took it. */
  async renew(): Promise<void> {
    this.assertHeld();
    const sentAt = monotonicMs();
    const body: LeaseBody = { ...this.body, renewedAt: new Date().toISOString(), renewals: this.body.renewals + 1 };
    let etag: string | 'refused';
    try {
      this.writes++;
      etag = await writeObject(this.remote, leaseKey(this.name), JSON.stringify(body), 'application/json', { ifMatch: this.etag });
    } catch (error) {
      if (monotonicMs() > this.validity.untilMs) this.assertHeld();
      throw error; // a failed renewal is tried again at the next tick, while the lease is still valid
    }
    if (etag === 'refused') {
      this.lost = await this.takenOver();
      throw this.lost;
    }
    this.etag = etag;
    this.body = body;
    this.validity.untilMs = sentAt + validityMs(this.options.ttlMs);
    this.armDeadline();
  }

  /** Gives the lease up at once (a waiter takes it without waiting out the TTL); never throws. */
  async release(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.deadline);
    this.onLost = undefined;
    if (this.kept !== undefined) {
      const puts = await this.kept.thread.release(this.kept.id);
      this.remote.counts.PUT += puts;
      this.kept = undefined;
      this.lost ??= prefixHeldError(`the ${this.name} lease on ${this.remote.where} was released`);
      return;
    }
    await this.renewing;
    if (!this.held) return;
    this.lost = prefixHeldError(`the ${this.name} lease on ${this.remote.where} was released`);
    const body: LeaseBody = { ...this.body, released: true, renewedAt: new Date().toISOString() };
    this.writes++;
    await writeObject(this.remote, leaseKey(this.name), JSON.stringify(body), 'application/json', { ifMatch: this.etag }).catch(
      () => undefined,
    );
  }

  /** The holder as status files show it. */
  get holder(): LeaseHolder {
    return this.body.holder;
  }

  private async takenOver(): Promise<SnapshotError> {
    const view = await Lease.look(this.remote, this.name).catch(() => undefined);
    const by = view === undefined ? 'another publisher' : describeHolder(view.body.holder);
    return prefixHeldError(
      `the ${this.name} lease on ${this.remote.where} was taken over by ${by}; this publish stopped writing`,
      'the other publisher brings the prefix to its tree; publish again afterwards if this tree should win',
    );
  }

  /** Whether this lease stands on a store that ignores conditional writes (accepted with --single-writer). */
  get unfenced(): boolean {
    return this.body.preconditions === 'ignored';
  }

  /** A store that ignores conditional writes is refused unless the user accepted it (--single-writer). */
  private async checkPreconditions(previous: LeaseView | undefined): Promise<void> {
    const known = previous?.body.preconditions;
    if (known === 'proven' || (known === 'ignored' && this.options.singleWriter)) return;
    const proven = await provePreconditions(this.remote, `${leaseKey(this.name)}.probe`);
    if (proven || this.options.singleWriter) {
      await this.record({ ...this.body, preconditions: proven ? 'proven' : 'ignored' });
      return;
    }
    await this.release();
    throw remoteError(
      `${this.remote.where} ignores conditional writes (a second If-None-Match: * create was accepted): two publishers could overwrite each other's objects unnoticed`,
      'use a store that honours them (AWS S3, R2, MinIO), or pass --single-writer if only one publisher ever writes to this prefix',
    );
  }

  private async record(body: LeaseBody): Promise<void> {
    const etag = await writeObject(this.remote, leaseKey(this.name), JSON.stringify(body), 'application/json', { ifMatch: this.etag });
    if (etag === 'refused') throw (this.lost = await this.takenOver());
    this.etag = etag;
    this.body = body;
  }
}

/** The holder's own validity: three quarters of the TTL, so it stops before any waiter may take over. */
const validityMs = (ttlMs: number) => (ttlMs * 3) / 4;

/** A waiter looks again this long after the lease should have expired (timers fire a little early or late). */
const EXPIRY_MARGIN_MS = 50;

const takeCondition = (view: LeaseView | undefined): WriteCondition => (view === undefined ? { ifNoneMatch: '*' } : { ifMatch: view.etag });

function newBody(name: LeaseName, options: LeaseOptions, previous: LeaseView | undefined): LeaseBody {
  const now = new Date().toISOString();
  return {
    tool: 'profile-snapshot',
    lease: name,
    holder: options.holder,
    acquiredAt: now,
    renewedAt: now,
    renewals: 0,
    ttlSeconds: options.ttlMs / 1000,
    released: false,
    preconditions: previous?.body.preconditions ?? 'unproven',
  };
}

function heldError(remote: Remote, view: LeaseView, waitedMs: number): SnapshotError {
  return prefixHeldError(
    `${remote.where}: the prefix is held by another publisher: ${describeHolder(view.body.holder)}, ${describeAge(view)}; waited ${Math.round(waitedMs / 1000)} s`,
    `retry later (exit 8 is transient) or raise --lock-timeout; a holder that was killed loses the lease ${view.body.ttlSeconds} s after its last renewal`,
  );
}
