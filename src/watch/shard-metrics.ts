/**
 * A shard's watcher (`watch --shard i/n --publish`): which shard it is, and what its publishes found
 * of the creators list joined from every shard (publish/shards/join.ts). Fed by the publishes' reports;
 * one series each (the shard label is fixed for the process).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PublishResult } from './publisher.js';

/** What /healthz says of the joined list, as of this watcher's last publish. */
export interface ListHealth {
  shard: string;
  /** Whether the live list holds this shard's current part. */
  holdsShard: boolean | null;
  /** Shards that have published no part yet (the list waits for them). */
  missingShards: number | null;
}

export class ShardMetrics {
  private readonly joins: Counter<'outcome'>;
  private readonly missing: Gauge;
  private readonly holds: Gauge;
  private last: Omit<ListHealth, 'shard'> = { holdsShard: null, missingShards: null };
  /** Since when the publishes have found the live list without this shard's current part. */
  private notHeldSinceMs: number | null = null;

  constructor(
    readonly shard: string,
    registers: Registry[],
  ) {
    new Gauge({
      name: 'profile_snapshot_shard_info',
      help: 'The shard this watcher builds and publishes: 1 for its i/n.',
      labelNames: ['shard'],
      registers,
    }).set({ shard }, 1);
    this.joins = new Counter({
      name: 'profile_snapshot_list_joins_total',
      help: "This watcher's publishes by what became of the joined creators list: joined (it wrote the list), current (the list already held every part), waiting (a shard had no part yet).",
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['joined', 'current', 'waiting']) this.joins.inc({ outcome }, 0);
    this.missing = new Gauge({
      name: 'profile_snapshot_list_missing_shards',
      help: 'Shards with no part of the list yet, at the last publish; -1 before it.',
      registers,
    });
    this.holds = new Gauge({
      name: 'profile_snapshot_list_holds_shard',
      help: "1 when the live list held this shard's current part at the last publish, 0 when not, -1 before it.",
      registers,
    });
    this.missing.set(-1);
    this.holds.set(-1);
  }

  countPublish(result: PublishResult): void {
    const shard = result.report?.shard;
    const join = shard?.join;
    if (shard === undefined || join === undefined) return;
    this.joins.inc({ outcome: join.missing.length > 0 ? 'waiting' : join.joined ? 'joined' : 'current' });
    this.last = { holdsShard: shard.listHoldsShard, missingShards: join.missing.length };
    this.notHeldSinceMs = shard.listHoldsShard ? null : (this.notHeldSinceMs ?? Date.now() - result.durationMs);
    this.missing.set(join.missing.length);
    this.holds.set(this.last.holdsShard ? 1 : 0);
  }

  health(): ListHealth {
    return { shard: this.shard, ...this.last };
  }

  /** How long the live list has lacked this shard's current part (0 while it holds it). */
  lagMs(nowMs: number): number {
    return this.notHeldSinceMs === null ? 0 : Math.max(0, nowMs - this.notHeldSinceMs);
  }
}
