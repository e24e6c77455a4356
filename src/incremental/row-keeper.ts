/**
 * The per-row decision of a pass: a row whose signature equals the one its published profile was
 * rendered from is kept as it is, with no render, no JSON and no hash. The account age is part of the
 * signature, so a profile whose age turns over is rendered again; a row that had warnings has no
 * signature and always is.
 */
import { nextAgeChangeMs, parseStoreDate, wholeDaysBetween } from '../render/dates.js';
import { Col, type StoreRow } from '../store/read.js';
import type { CreatorsList } from '../output/creators.js';
import { hasSignature, listLength } from '../output/manifest.js';
import type { OutputTransaction, SliceTransaction } from '../output/tree.js';
import { rowSignature } from './signature.js';

export class RowKeeper {
  /** Profiles kept by this keeper. */
  kept = 0;
  /** The first snapshot time at which a kept profile's account age turns over. */
  stableUntilMs = Infinity;

  constructor(
    private readonly output: OutputTransaction | SliceTransaction,
    private readonly creators: CreatorsList,
    private readonly snapshotMs: number,
  ) {}

  /**
   * Keeps the row's profile when it is unchanged, and returns true. Otherwise returns the row's
   * signature when it had to be computed (for `signatureOf` to reuse), or undefined.
   */
  keep(row: StoreRow): true | string | undefined {
    const username = row.user[Col.username];
    if (typeof username !== 'string' || !Number.isSafeInteger(row.user[Col.id])) return undefined;
    const name = username.toLowerCase();
    const last = this.output.previousProfile(name);
    if (last === undefined || this.output.hasProfile(name)) return undefined;
    const member = row.user[Col.status] === 'active';
    // A list member's bytes come from the last list file, which must be there, as it was written.
    const length = member ? listLength(last) : undefined;
    if (member && (length === undefined || !this.creators.canKeep)) return undefined;
    const created = parseStoreDate(row.user[Col.createdAt]);
    if (created === undefined) return undefined;
    // The same account age renderUser derives, so this is the signature it would be stored under.
    const signature = rowSignature(row, wholeDaysBetween(created.ms, this.snapshotMs));
    // A healing build may find the profile's files damaged: then it is rendered again.
    if (!hasSignature(last, signature) || !this.output.keepProfile(name, last)) return signature;
    this.stableUntilMs = Math.min(this.stableUntilMs, nextAgeChangeMs(created.ms, this.snapshotMs));
    this.kept++;
    // The whole entry, which starts with the data hash: a hash cut out of it (a sliced string per
    // member) would keep the manifest's text alive.
    if (length !== undefined) this.creators.keep(name, last, length);
    return true;
  }
}

/**
 * The signature a rendered profile is recorded under, for the next pass to keep it by: '' (never
 * kept) when its row had warnings. `computed` is what `keep` returned for the row, if anything.
 */
export function signatureOf(row: StoreRow, accountAgeDays: number, hadWarnings: boolean, computed: string | undefined): string {
  if (hadWarnings) return '';
  return computed ?? rowSignature(row, accountAgeDays);
}
