/**
 * A publish's options as its steps take them (publish.ts resolves them once per publish).
 */
import type { Later } from './bucket/later.js';
import { thisHolder } from './lease/holder.js';
import type { LeaseOptions } from './lease/lease.js';
import { DEFAULT_LEASE_TTL_MS } from './lease/defaults.js';
import type { PublishOptions } from './report.js';

/** The out dir made absolute, and the publish's rounds of sending again later. */
export type Run = PublishOptions & { later: Later };

/** The lease a publish takes its turns with: its TTL, whether the store may ignore conditional writes, and this process. */
export function leaseOptions(options: PublishOptions): LeaseOptions {
  return {
    ttlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    singleWriter: Boolean(options.singleWriter),
    holder: thisHolder(),
  };
}
