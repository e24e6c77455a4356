#!/usr/bin/env node
// Creates data/profiles.db from data/schema.sql + data/sample.sql when it is missing or older than
// them. A step of `npm run build`, never of the CLI: the CLI never invents a store.
import Database from 'better-sqlite3';
import { existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dataDir = fileURLToPath(new URL('../data/', import.meta.url));
const target = `${dataDir}profiles.db`;
const sources = [`${dataDir}schema.sql`, `${dataDir}sample.sql`];

const newestSource = Math.max(...sources.map((f) => statSync(f).mtimeMs));
if (existsSync(target) && statSync(target).mtimeMs >= newestSource) process.exit(0);

const temporary = `${target}.tmp`;
rmSync(temporary, { force: true });
const db = new Database(temporary);
// better-sqlite3 enforces foreign keys by default; the sample deliberately holds a dangling one.
db.pragma('foreign_keys = OFF');
try {
  for (const file of sources) db.exec(readFileSync(file, 'utf8'));
} finally {
  db.close();
}
renameSync(temporary, target);
console.error(`sample store written: ${target}`);
