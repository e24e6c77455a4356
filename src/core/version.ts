/**
 * Who wrote an out dir: the package version, plus when the running code was compiled. A record of
 * the last build (incremental/last-pass.ts) is only trusted by the same tool, so an upgraded or locally
 * rebuilt renderer always re-renders rather than keeping documents an older one wrote.
 */
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const { version: TOOL_VERSION } = createRequire(import.meta.url)('../../package.json') as { version: string };

let identity: string | undefined;

export function toolIdentity(): string {
  if (identity === undefined) {
    // Every compiled module of the package: this file sits one folder below the compiled root.
    const root = dirname(dirname(fileURLToPath(import.meta.url)));
    let newest = 0;
    for (const entry of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
      if (entry.endsWith('.js')) newest = Math.max(newest, statSync(join(root, entry)).mtimeMs);
    }
    identity = `${TOOL_VERSION}+${Math.floor(newest)}`;
  }
  return identity;
}
