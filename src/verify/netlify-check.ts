/**
 * The audit's Netlify checks (`verify --netlify`): no folder past Netlify's per-folder limit, and
 * the committed netlify.toml is what the route table renders.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { classifyFolders, NETLIFY_MAX_FILES_PER_DIR, nearLimitMessage } from '../hosting/hosts/netlify-limits.js';
import { NETLIFY_TOML, renderNetlifyToml } from '../hosting/hosts/netlify-config.js';
import type { Findings } from './defects.js';
import { fileExists } from './documents-check.js';
import { count } from '../core/text.js';

export function checkNetlify(counts: { dir: string; entries: number }[], root: string | undefined, findings: Findings): void {
  const { over, near } = classifyFolders(counts);
  for (const c of over) {
    findings.defect(
      'netlify-folder-limit',
      c.dir,
      `holds ${count(c.entries)} files, over Netlify's limit of ${count(NETLIFY_MAX_FILES_PER_DIR)} per folder: the deploy would fail; serve this snapshot with profile-snapshot serve behind a CDN instead`,
    );
  }
  for (const c of near) findings.warn(nearLimitMessage(c));
  checkNetlifyToml(resolve(root ?? '.'), findings);
}

/**
 * netlify.toml only: `netlify config --check` compares the edge routing module (in CI), while this
 * audit may run from sources (the test suites).
 */
function checkNetlifyToml(root: string, findings: Findings): void {
  const path = join(root, NETLIFY_TOML);
  if (!fileExists(path)) {
    findings.defect(
      'netlify-config',
      NETLIFY_TOML,
      `missing in ${root}: Netlify would deploy without the rules, headers and edge function the route table renders; run profile-snapshot netlify config and commit the result`,
    );
  } else if (readFileSync(path, 'utf8') !== renderNetlifyToml()) {
    findings.defect(
      'netlify-config',
      NETLIFY_TOML,
      "differs from what the route table (src/hosting/routes/routes.ts) renders: the deployed rules or headers would not be the contract's; run profile-snapshot netlify config and commit the result",
    );
  }
}
