/**
 * A real snapshot for the hosting tests: the sample store (data/schema.sql + data/sample.sql) written
 * to a real SQLite file in a temp folder, built by the real generator into a temp out dir.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../src/build.js';
import { createOrigin, listen } from '../../src/hosting/origin.js';
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
