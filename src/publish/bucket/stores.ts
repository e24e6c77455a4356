/**
 * What differs between the S3-compatible stores a publish writes to, in one table (as rclone keeps
 * its providers'). A store is told by its endpoint's host; an endpoint of no known store gets S3's
 * behaviour, and a store that lacks the batch delete is still found out by its answer (upload.ts).
 */
import { r2PartRules, S3_PART_RULES, type PartRules } from './compose-plan.js';

export interface StoreQuirks {
  /** Every part of a multipart upload but the last of one size (R2's rule; compose-plan.ts). */
  equalParts: boolean;
  /** Whether DeleteObjects (a thousand keys a request) is there: Google Cloud Storage's XML API has none. */
  batchDelete: boolean;
}

const S3: StoreQuirks = { equalParts: false, batchDelete: true };

/** By the end of the endpoint's host name. */
const STORES: readonly { host: string; quirks: StoreQuirks }[] = [
  { host: '.r2.cloudflarestorage.com', quirks: { equalParts: true, batchDelete: true } },
  { host: 'storage.googleapis.com', quirks: { equalParts: false, batchDelete: false } },
];

/**
 * Checksums: S3-compatible servers (R2, GCS, MinIO, older releases) do not all take the SDK's default
 * checksum headers or aws-chunked bodies, and S3 itself needs neither: only where an operation
 * requires one, for every store.
 */
export const CHECKSUMS = { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } as const;

/** The quirks of the store at `endpoint` (undefined: AWS S3 itself). */
export function quirksOf(endpoint: string | undefined): StoreQuirks {
  const host = endpoint === undefined ? '' : new URL(endpoint).hostname;
  return STORES.find((store) => host.endsWith(store.host))?.quirks ?? S3;
}

/** The part rules a multipart upload of copies follows at `endpoint`; `equalParts` overrides the table. */
export function partRulesOf(endpoint: string | undefined, equalParts: boolean | undefined): PartRules {
  return (equalParts ?? quirksOf(endpoint).equalParts) ? r2PartRules(S3_PART_RULES.minPartBytes) : S3_PART_RULES;
}
