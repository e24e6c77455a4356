/** The creators list assembled from its scratch file, by whole read and by positioned reads. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreatorsList } from '../../src/output/creators.js';
import { OutputTransaction } from '../../src/output/tree.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

const members: [string, string][] = [
  ['zed', '{"username":"Zed","bio":"🎨 ünïcödé"}'],
  ['_under', '{"username":"_under"}'],
  ['b.c', '{"username":"b.c","bio":"\\u2028 \\"quoted\\""}'],
  ['a-b', '{"username":"A-b"}'],
];

describe.each([
  ['read whole', undefined],
  ['positioned reads', 0],
])('CreatorsList (%s)', (_label, limit) => {
  it('writes the members sorted by name, each with its exact bytes, inside the envelope', () => {
    const tx = OutputTransaction.begin(dir.path);
    const list = new CreatorsList(tx, 'list', limit);
    for (const [name, json] of members) {
      tx.profile(name, `hash-${name}`, '', Buffer.byteLength(json), () => json);
      list.add(name, json, `hash-${name}`);
    }
    list.finish('{"head":', () => ',"tail":1}');
    tx.commit();
    const text = readFileSync(join(dir.path, 'list'), 'utf8');
    expect(text).toBe(`{"head":[${['_under', 'a-b', 'b.c', 'zed'].map((n) => members.find(([m]) => m === n)![1]).join(',')}],"tail":1}`);
    expect(JSON.parse(text).head.map((u: { username: string }) => u.username)).toEqual(['_under', 'A-b', 'b.c', 'Zed']);
  });
});

it('an empty list is an empty array', () => {
  const tx = OutputTransaction.begin(dir.path);
  new CreatorsList(tx, 'list').finish('{"data":', () => '}');
  tx.commit();
  expect(readFileSync(join(dir.path, 'list'), 'utf8')).toBe('{"data":[]}');
});
