/**
 * Files rendered from the route table and committed (netlify.toml, the edge function's routing, the
 * Cloudflare Worker, the CloudFront Function...): the banner that marks them, and the one way they
 * are written or checked, so that `<host> config --check` means the same for every host.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The banner's lines, without comment markers; each file format adds its own. */
export function generatedBanner(command: string): string[] {
  return [
    `GENERATED from the route table (src/hosting/routes/routes.ts) by \`profile-snapshot ${command}\`. Do not edit:`,
    'a test fails when this file differs from what the table renders; regenerate it instead.',
  ];
}

/**
 * Writes the rendered files under `root` (or, with `check`, only compares). Returns the paths that
 * differed from what is on disk (were rewritten, or would be).
 */
export function syncGeneratedFiles(root: string, files: ReadonlyMap<string, string>, options: { check: boolean }): string[] {
  const stale: string[] = [];
  for (const [path, text] of files) {
    const file = join(root, path);
    const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
    if (current === text) continue;
    stale.push(path);
    if (!options.check) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
  }
  return stale;
}
