/**
 * Which of several `watch --publish` processes on one prefix publishes: the holder of the prefix's
 * leadership lease (publish/lease/lease.ts, `leader`). The others stand by: they keep building their own
 * trees, look at the lease once a cycle, and take it when its holder releases it (SIGTERM) or it
 * expires (kill -9, a lost network). A standby also looks the moment the lease it saw would expire,
 * so it leads one TTL after the last renewal it saw, whatever its cycle. The leader renews the lease
 * every quarter TTL from a thread of its own (publish/lease/keeper.ts), so a long build never costs it
 * the lead; a leader whose lease lapsed all the same (a lost network) finds it still its own at the next
 * look and retakes it, unless another watcher took over meanwhile.
 */
import { scopeOf } from '../publish/keys.js';
import type { Remote, RemoteOptions } from '../publish/bucket/client.js';
import { thisHolder, type LeaseHolder } from '../publish/lease/holder.js';
import type { Lease } from '../publish/lease/lease.js';
import { Sightings, type LeaseView } from '../publish/lease/view.js';
import type { Slice } from '../core/slice.js';
import type { LeaseHolderStatus, PublishStatus } from './status.js';

export type Role = PublishStatus['role'];

export interface LeadershipOptions {
  remote: RemoteOptions;
  /** The shard the watcher publishes: its watchers take turns through that shard's own leases. */
  shard?: Slice | undefined;
  ttlMs: number;
  singleWriter: boolean;
}

export class Leadership {
  private lease: Lease | undefined;
  /** The holder as last seen, and when (ours while leader). */
  private seen: { holder: LeaseHolder; ageMs: number | undefined; at: number } | undefined;
  private holder: LeaseHolder | undefined;
  private closed = false;
  private remote: Remote | undefined;
  /**
   * What this watcher saw of the leadership lease and of the publish lock (see publish/lease/lease.ts): a standby
   * that takes over from a leader killed mid-publish does not wait out the lock's TTL a second time.
   */
  private sightings: { leader: Sightings; lock: Sightings } | undefined;
  private checking: Promise<Role> | undefined;
  /** While standing by: when the leader's lease, as last seen, may be taken (Date.now() scale). */
  private leaderFreeAt: number | undefined;

  constructor(private readonly options: LeadershipOptions) {}

  get role(): Role {
    return this.lease?.held ? 'leader' : 'standby';
  }

  /**
   * Leader or standby as of now: takes the lease when it is free. Throws when the bucket cannot be
   * read. Never two looks at once (a second caller shares the look under way).
   */
  check(): Promise<Role> {
    if (this.closed) return Promise.resolve('standby');
    if (this.lease?.held) return Promise.resolve('leader');
    this.checking ??= this.look().finally(() => (this.checking = undefined));
    return this.checking;
  }

  /**
   * While standing by: how long until the leader's lease, unrenewed since the last look, may be taken;
   * a standby looks again then rather than at its next cycle.
   */
  get leaderFreeInMs(): number | undefined {
    return this.lease?.held || this.leaderFreeAt === undefined ? undefined : Math.max(0, this.leaderFreeAt - Date.now());
  }

  /** What this watcher saw of the publish lock while standing by: a publish's wait for it goes on from there. */
  get lockSightings(): Sightings | undefined {
    return this.sightings?.lock;
  }

  private async look(): Promise<Role> {
    // Loaded on first use: the AWS SDK is only for watchers that publish.
    const { Lease } = await import('../publish/lease/lease.js');
    const scope = scopeOf(this.options.shard);
    this.remote ??= await (await import('../publish/bucket/client.js')).Remote.open(this.options.remote);
    this.holder ??= thisHolder();
    this.sightings ??= { leader: new Sightings(), lock: new Sightings() };
    const options = { ttlMs: this.options.ttlMs, singleWriter: this.options.singleWriter, holder: this.holder };
    const result = await Lease.tryAcquire(this.remote, scope.leader, options, this.sightings.leader);
    if (result instanceof Lease) {
      this.lease = result;
      result.keepRenewing();
      this.seen = { holder: result.holder, ageMs: 0, at: Date.now() };
      return 'leader';
    }
    this.lease = undefined;
    this.see(result);
    this.leaderFreeAt = result.body.released ? Date.now() : Date.now() + this.sightings.leader.expiresInMs(result);
    // The leader's publish may hold the lock: counted from now, a takeover does not wait for it twice.
    const lock = await Lease.look(this.remote, scope.lock);
    if (lock !== undefined) this.sightings.lock.expiresInMs(lock);
    return 'standby';
  }

  /** The role, the holder and the lease's age, for the status file. */
  status(): Pick<PublishStatus, 'role' | 'leader' | 'leaseAgeSeconds'> {
    const seen = this.seen;
    if (seen === undefined) return { role: this.role, leader: null, leaseAgeSeconds: null };
    const age = this.role === 'leader' ? 0 : seen.ageMs === undefined ? undefined : seen.ageMs + (Date.now() - seen.at);
    return { role: this.role, leader: holderStatus(seen.holder), leaseAgeSeconds: age === undefined ? null : Math.round(age / 100) / 10 };
  }

  /** At the watcher's end: gives the lead up at once, so a standby takes over at its next cycle. */
  async close(): Promise<void> {
    this.closed = true;
    await this.lease?.release();
    this.lease = undefined;
    this.remote?.close();
  }

  private see(view: LeaseView): void {
    this.seen = { holder: view.body.holder, ageMs: view.ageMs, at: Date.now() };
  }
}

const holderStatus = (holder: LeaseHolder): LeaseHolderStatus => ({
  host: holder.host,
  pid: holder.pid,
  id: holder.id,
  startedAt: holder.startedAt,
});
