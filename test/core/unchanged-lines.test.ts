/**
 * A manifest written again by the process that wrote the last one copies its unchanged member lines
 * from the last file (unchanged-lines.ts): the result must be, byte for byte, the manifest encoded
 * afresh, whatever changed between them (entries, members gone or new, other lines before them).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { MANIFEST_FILE, STATE_DIR } from '../../src/core/layout.js';
import { writeManifest, type Manifest } from '../../src/output/manifest.js';
import { PositionedReader } from '../../src/output/positioned-reader.js';
import { lastMemberLines } from '../../src/output/unchanged-lines.js';
import { prng } from '../../src/seed/synthetic.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => (dir = tempDir()));
afterEach(() => dir.cleanup());

const outDir = (name: string) => {
  const path = join(dir.path, name);
  mkdirSync(join(path, STATE_DIR), { recursive: true });
  return path;
};

/** A manifest of `names` (sorted, all members), each entry drawn by `entryOf`, and `files` other documents. */
function manifestOf(names: string[], entryOf: (name: string) => string, files: number, others: string[]): Manifest {
  const entries = names.map(entryOf);
  const profiles = new Map(names.map((name, i) => [name, entries[i]!]));
  for (const name of others) profiles.set(name, `${entryOf(name).split('\t')[0]}\tsig\t`);
  const fileMap = new Map(Array.from({ length: files }, (_, i) => [`doc/${'x'.repeat(i)}`, `h${i}\t1:2:3`]));
  const lengths = entries.map((entry) => Number(entry.split('\t')[2]));
  return { renderKey: 'tool+1\thttp://x', profiles, files: fileMap, list: { names, lengths, entries } };
}

it('copies unchanged member lines from the last manifest, and writes exactly what a fresh encoding writes', () => {
  const random = prng(30);
  const pick = (n: number) => Math.floor(random() * n);
  const entry = (name: string, version: number) => `${name.padEnd(16, '0').slice(0, 16)}\tv${version}\t${100 + version + name.length}`;
  const version = new Map<string, number>();
  const entryOf = (name: string) => entry(name, version.get(name) ?? 0);
  let names = Array.from({ length: 300 }, (_, i) => `user${String(i * 7).padStart(4, '0')}`).sort();
  const kept = outDir('kept');
  let last = manifestOf(names, entryOf, 3, ['zz-other']);
  writeManifest(kept, last);
  const copy = vi.spyOn(PositionedReader.prototype, 'copy');
  let written = 0;
  for (let round = 0; round < 40; round++) {
    // Some entries change (to a longer or shorter one), some members go, some come, and the lines
    // before the members (other documents) change length.
    for (let i = 0; i < pick(12); i++) version.set(names[pick(names.length)]!, pick(1000));
    const gone = new Set(Array.from({ length: pick(6) }, () => names[pick(names.length)]!));
    const added = Array.from({ length: pick(6) }, () => `user${String(pick(3000)).padStart(4, '0')}x`);
    names = [...new Set([...names.filter((name) => !gone.has(name)), ...added])].sort();
    const next = manifestOf(names, entryOf, 1 + pick(5), round % 3 === 0 ? [] : ['zz-other']);
    const lines = lastMemberLines(join(kept, MANIFEST_FILE), last.membersAt, last.list);
    expect(lines, 'the last manifest was written by this process: its member lines are known').toBeDefined();
    writeManifest(kept, next, lines);
    const fresh = outDir(`fresh-${round}`);
    writeManifest(fresh, next);
    const bytes = readFileSync(join(kept, MANIFEST_FILE), 'latin1');
    expect(bytes, `round ${round}`).toBe(readFileSync(join(fresh, MANIFEST_FILE), 'latin1'));
    written += bytes.length;
    last = next;
  }
  // Most of every manifest was copied, not encoded.
  const copied = copy.mock.calls.reduce((sum, [, length]) => sum + length, 0);
  expect(copied / written).toBeGreaterThan(0.7);
});

it('knows no member lines for a manifest read from disk, or with an entry missing', () => {
  const list = { names: ['a', 'b'], lengths: [1, 2], entries: ['h\ts\t1', undefined] };
  expect(lastMemberLines('/m', undefined, { ...list, entries: ['h\ts\t1', 'h\ts\t2'] })).toBeUndefined();
  expect(lastMemberLines('/m', 10, list)).toBeUndefined();
  expect(lastMemberLines('/m', 10, { names: ['a'] })).toBeUndefined();
  expect(lastMemberLines('/m', 10, { ...list, entries: ['h\ts\t1', 'h\ts\t2'] })?.start).toBe(10);
});
