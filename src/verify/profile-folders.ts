/**
 * The audit's profile check over the users folders the tree walk found: every name under every
 * alias folder, audited once (./profiles.ts), on two threads for large trees (./parallel.ts).
 */
import type { Dirent } from 'node:fs';
import { PROFILE_DIRS } from '../core/layout.js';
import type { Findings } from './defects.js';
import { profilePass } from './parallel.js';
import { ABSENT, FILE, FOLDER, OTHER, SYMLINK } from './profiles.js';

export interface ProfileFolders {
  /** Every name found in any users folder. */
  names: Set<string>;
  /** Per alias folder (PROFILE_DIRS order), its visible entries by name. */
  byDir: Map<string, Dirent>[];
  /** Lower-cased name -> key (./profiles.ts) of every profile with a parsed document. */
  profiles: Map<string, number>;
  /** Regular files looked at. */
  files: number;
  threads: number;
}

export function checkProfileFolders(
  out: string,
  users: Map<string, Dirent[]>,
  parallel: boolean | undefined,
  findings: Findings,
): ProfileFolders {
  const byDir = PROFILE_DIRS.map((dir) => {
    const map = new Map<string, Dirent>();
    for (const e of users.get(dir) ?? []) if (!e.name.startsWith('.')) map.set(e.name, e);
    return map;
  });
  const names = new Set<string>(byDir[0]!.keys());
  for (const map of byDir.slice(1)) for (const name of map.keys()) names.add(name);
  const nameList = [...names];
  const pass = profilePass(out, nameList, entryTypes(nameList, byDir), { parallel });
  findings.defects.push(...pass.defects);
  const profiles = new Map<string, number>();
  pass.names.forEach((name, i) => profiles.set(name, pass.keys[i]!));
  return { names, byDir, profiles, files: pass.files, threads: pass.threads };
}

/** One byte per name and alias folder: what the folder holds under that name. */
function entryTypes(names: readonly string[], byDir: Map<string, Dirent>[]): Uint8Array {
  const types = new Uint8Array(names.length * PROFILE_DIRS.length);
  names.forEach((name, n) => {
    byDir.forEach((map, d) => {
      const e = map.get(name);
      types[n * PROFILE_DIRS.length + d] =
        e === undefined ? ABSENT : e.isFile() ? FILE : e.isDirectory() ? FOLDER : e.isSymbolicLink() ? SYMLINK : OTHER;
    });
  });
  return types;
}
