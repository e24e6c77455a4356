/**
 * The audit's check of the manifest against the tree: what the last build says it wrote must be
 * there, nothing may be left pending (an interrupted commit), and a users folder must hold only
 * profiles the tool wrote.
 */
import { join } from 'node:path';
import { describeCause } from '../core/errors.js';
import { MANIFEST_FILE, PROFILE_DIRS } from '../core/layout.js';
import { PENDING, readManifest, type Manifest } from '../output/manifest.js';
import type { Findings } from './defects.js';
import { API_DOCUMENTS, ERROR_FILES, fileExists } from './documents-check.js';
import type { ProfileFolders } from './profile-folders.js';

/** Returns the entries marked pending. */
export function checkManifest(out: string, folders: ProfileFolders, writerActive: boolean | undefined, findings: Findings): number {
  let manifest: Manifest;
  try {
    manifest = readManifest(out);
  } catch (cause) {
    findings.defect('manifest', MANIFEST_FILE, `${describeCause(cause)}`);
    return 0;
  }
  const pending = checkEntries(out, manifest, folders, findings);
  if (pending > 0 && !writerActive) {
    findings.defect(
      'manifest',
      MANIFEST_FILE,
      `${pending} entr${pending === 1 ? 'y is' : 'ies are'} pending: a build was interrupted while publishing, so files may be half-way between two snapshots; run build again`,
    );
  }
  if (manifest.profiles.size > 0 || manifest.files.size > 0) checkUnlisted(manifest, folders, findings);
  return pending;
}

/** Every entry's file must be there, unless pending; returns the pending ones. */
function checkEntries(out: string, manifest: Manifest, folders: ProfileFolders, findings: Findings): number {
  let pending = 0;
  for (const [name, hash] of manifest.profiles) {
    if (hash === PENDING) pending++;
    else if (!folders.names.has(name))
      findings.defect(
        'manifest',
        `${PROFILE_DIRS[0]}/${name}`,
        'listed in the manifest as published by the last build, but missing under every alias folder',
      );
  }
  for (const [path, hash] of manifest.files) {
    if (hash === PENDING) pending++;
    // Missing documents the other checks know are reported there.
    else if (!ERROR_FILES.has(path) && !API_DOCUMENTS.has(path) && !fileExists(join(out, path))) {
      findings.defect('manifest', path, 'listed in the manifest as written by the last build, but missing');
    }
  }
  return pending;
}

/** A profile file the manifest does not list was not written by the tool. */
function checkUnlisted(manifest: Manifest, folders: ProfileFolders, findings: Findings): void {
  for (const name of folders.names) {
    if (manifest.profiles.has(name)) continue;
    PROFILE_DIRS.forEach((dir, d) => {
      if (folders.byDir[d]!.get(name)?.isFile()) {
        findings.defect(
          'stray',
          `${dir}/${name}`,
          'in a users folder but not written by profile-snapshot (not in its manifest): it is served as a profile, though the store did not publish it',
        );
      }
    });
  }
}
