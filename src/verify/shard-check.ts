/**
 * A shard's tree (`build --shard i/n`): the one `--shard` names, holding only its own users. A
 * profile of another shard would be published twice, by two shards that each may delete it.
 */
import { MANIFEST_FILE, PROFILE_DIRS } from '../core/layout.js';
import { shardOfRenderKey } from '../core/render-key.js';
import { formatSlice, inSlice, type Slice } from '../core/slice.js';
import { readManifestRenderKey } from '../output/manifest.js';
import type { Findings } from './defects.js';

/** Most profiles outside the shard named one by one; the rest are counted. */
const NAMED = 20;

export function checkShard(out: string, profiles: ReadonlyMap<string, unknown>, expected: Slice | undefined, findings: Findings): void {
  const recorded = readManifestRenderKey(out);
  const built = recorded === undefined ? undefined : shardOfRenderKey(recorded);
  if (expected !== undefined && (built === undefined || formatSlice(built) !== formatSlice(expected))) {
    const what = built === undefined ? 'a tree built without --shard' : `shard ${formatSlice(built)}`;
    findings.defect('shard', MANIFEST_FILE, `the tree is ${what}, not shard ${formatSlice(expected)}`);
  }
  const shard = built ?? expected;
  if (shard === undefined || shard.count === 1) return;
  let outside = 0;
  for (const name of profiles.keys()) {
    if (inSlice(name, shard)) continue;
    if (++outside <= NAMED)
      findings.defect('shard', `${PROFILE_DIRS[0]}/${name}`, `the profile ${name} belongs to another shard than ${formatSlice(shard)}`);
  }
  if (outside > NAMED)
    findings.defect('shard', PROFILE_DIRS[0], `${outside - NAMED} more profiles belong to another shard than ${formatSlice(shard)}`);
}
