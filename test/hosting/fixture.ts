/**
 * A real snapshot for the hosting tests: the sample store (data/schema.sql + data/sample.sql) written
 * to a real SQLite file in a temp folder, built by the real generator into a temp out dir.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from '../../src/build.js';
import { FILE_CACHE_DEFAULTS } from '../../src/hosting/serve/file-cache.js';
import { createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { REPO } from '../helpers/paths.js';

export { REPO };

export interface Snapshot {
  root: string;
  db: string;
  out: string;
  cleanup: () => void;
}

export function buildSampleSnapshot(): Snapshot {
  const root = mkdtempSync(join(tmpdir(), 'profile-snapshot-hosting-'));
  const db = join(root, 'profiles.db');
  const store = new Database(db);
  store.pragma('foreign_keys = OFF'); // the sample holds a deliberately dangling decoration id
  store.exec(readFileSync(join(REPO, 'data/schema.sql'), 'utf8'));
  store.exec(readFileSync(join(REPO, 'data/sample.sql'), 'utf8'));
  store.close();
  const out = join(root, 'dist');
  build({ db, out, baseUrl: 'https://profiles.example.com', snapshotMs: Date.UTC(2026, 0, 1), reproducible: true });
  return { root, db, out, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/**
 * Makes the snapshot's creators list and its gzip variant larger than the origin keeps in memory, as
 * a large store's are, so that their answers come from serve-handler's path: the list with a member
 * of random text added (which the variant cannot compress below the limit). Returns the new list.
 */
export function growCreatorsList(out: string): Buffer {
  const file = join(out, 'service-api/v1/creators');
  const list = JSON.parse(readFileSync(file, 'utf8')) as object;
  const padding = randomBytes(2 * FILE_CACHE_DEFAULTS.maxFileBytes).toString('base64');
  const grown = Buffer.from(JSON.stringify({ ...list, padding }));
  writeFileSync(file, grown);
  writeFileSync(join(out, 'service-api/v1/.creators.gz'), gzipSync(grown));
  return grown;
}

/** `serve` on a snapshot, on 127.0.0.1 at a free port. */
export async function serveSnapshot(out: string): Promise<{ origin: string; close: () => Promise<void> }> {
  const { server } = createOrigin({ out });
  const { port } = await listen(server, 0, '127.0.0.1');
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
