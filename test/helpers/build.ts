/** Builds in-process through the library (fast); CLI behaviour is tested through the real bin. */
import { join } from 'node:path';
import { build, type BuildOptions, type BuildReport } from '../../src/build.js';
import { tempDir, TestStore } from './store.js';

/** 2026-01-01T00:00:00Z: a fixed snapshot time so ages and timestamps are predictable. */
export const SNAPSHOT_MS = Date.UTC(2026, 0, 1);

export function buildTo(db: string, out: string, options: Partial<BuildOptions> = {}): BuildReport {
  return build({ db, out, baseUrl: 'https://profiles.example.com', snapshotMs: SNAPSHOT_MS, reproducible: true, ...options });
}

/** A fresh store in a temp folder, filled by `fill`, built once; returns everything a test needs. */
export function buildStore(fill: (store: TestStore) => void, options: Partial<BuildOptions> = {}) {
  const dir = tempDir();
  const db = join(dir.path, 'profiles.db');
  const store = new TestStore(db);
  fill(store);
  store.close();
  const out = join(dir.path, 'dist');
  const report = buildTo(db, out, options);
  return { dir, db, out, report };
}
