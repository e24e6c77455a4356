/**
 * A selective pass reads only the users a session selected (see session.ts): every other profile is
 * carried over as the last pass published it, and its list member copied from the last list. These
 * are the checks that such a pass gives the result a full pass would; when one fails, the pass is
 * abandoned (nothing written) and a full pass runs instead.
 */
import type { CreatorsList } from '../output/creators.js';
import { isUnsigned } from '../output/manifest.js';
import type { OutputTransaction } from '../output/tree.js';
import type { ProfileStore } from '../store/read.js';
import type { Selection } from './selection.js';

/** Raised inside a selective pass whose result would differ from a full pass's. */
export class SelectionFallsShort extends Error {}

/**
 * Carries every profile of the last pass over except those the selected users held (their rows are
 * read again), and tells the store's copy which users are read. Returns the profiles carried.
 */
export function carryOverUnselected(output: OutputTransaction, creators: CreatorsList, store: ProfileStore, selection: Selection): number {
  const carried = output.carryOver(releasedNames(output, selection));
  if (carried === undefined || !creators.keepCarried(output, carried)) throw new SelectionFallsShort();
  store.selectUsers(selection.users);
  return carried.count;
}

/**
 * The names the selected users held: a user holds its name when the last pass published it, that is
 * every user it had no warning for and, of those it had warnings for, those whose profile records
 * no signature.
 */
function releasedNames(output: OutputTransaction, selection: Selection): Set<string> {
  const released = new Set<string>();
  for (const [id, username] of selection.copy.usernames(selection.users)) {
    if (typeof username !== 'string') continue;
    const name = username.toLowerCase();
    const entry = output.previousProfile(name);
    if (entry !== undefined && (!selection.warned.has(id) || isUnsigned(entry))) released.add(name);
  }
  return released;
}

/**
 * A read user whose name is already published: a full pass would skip the user with the higher id.
 * When a carried-over (unread) user holds the name, that holds only if its id is lower: otherwise a
 * changed user now claims the name of an unchanged one with a higher id, and the pass falls short.
 */
export function checkDuplicateHolder(
  output: OutputTransaction,
  store: ProfileStore,
  selection: Selection | undefined,
  name: string,
  id: number,
): void {
  if (selection === undefined || output.carriedEntry(name) === undefined) return;
  const holders = selection.copy.holders(name).filter((holderId) => !selection.users.has(holderId));
  if (!(holders.length === 1 && holders[0]! < id)) throw new SelectionFallsShort();
}
