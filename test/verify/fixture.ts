/**
 * Real builds to corrupt: the sample store (data/sample.sql) built by the real generator into a temp
 * folder, one fresh build per test, so each fixture is a real tree with exactly one kind of damage.
 */
import { readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildTo } from '../helpers/build.js';
import { tempDir, TestStore } from '../helpers/store.js';

export interface Tree {
  root: string;
  out: string;
  db: string;
  path: (rel: string) => string;
  read: (rel: string) => string;
  json: (rel: string) => any;
  /** Writes a file in place (a hard-linked alias sees the change too). */
  write: (rel: string, text: string) => void;
  /** Replaces one file by a new one (breaks a hard link: only this alias changes). */
  replace: (rel: string, text: string) => void;
  remove: (rel: string) => void;
  cleanup: () => void;
}

export function sampleTree(): Tree {
  const dir = tempDir('profile-snapshot-verify-');
  const db = join(dir.path, 'sample.db');
  TestStore.sample(db).close();
  const out = join(dir.path, 'dist');
  buildTo(db, out);
  const path = (rel: string) => join(out, rel);
  return {
    root: dir.path,
    out,
    db,
    path,
    read: (rel) => readFileSync(path(rel), 'utf8'),
    json: (rel) => JSON.parse(readFileSync(path(rel), 'utf8')),
    write: (rel, text) => writeFileSync(path(rel), text),
    replace: (rel, text) => {
      rmSync(path(rel), { force: true });
      writeFileSync(path(rel), text);
    },
    remove: (rel) => unlinkSync(path(rel)),
    cleanup: dir.cleanup,
  };
}

/** The creators list as the build writes it (JSON.stringify of the whole envelope, no spaces). */
export function rewriteCreators(tree: Tree, edit: (data: any[]) => any[]): void {
  const list = tree.json('service-api/v1/creators');
  list.data = edit(list.data);
  tree.write('service-api/v1/creators', JSON.stringify(list));
  // Its gzip variant follows, so each test sees only the defect it made in the list.
  writeFileSync(join(tree.out, 'service-api/v1/.creators.gz'), gzipSync(JSON.stringify(list)));
}
