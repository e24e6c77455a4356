/**
 * The writer behind the manifest and the list (file-writer.ts): whatever mix of text, encoded lines
 * and copied byte ranges it is handed, the file holds them in the order they came. Copied ranges go
 * out three ways by size: through its buffer, gathered where they are (with a chained digest), or
 * written on their own.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { BufferedFileWriter } from '../../src/output/file-writer.js';
import { prng } from '../../src/seed/synthetic.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => (dir = tempDir()));
afterEach(() => dir.cleanup());

const random = prng(7);
const pick = (n: number) => Math.floor(random() * n);

/** Writes a random mix into a new file (chained or not), returning the file's bytes and what was meant. */
function writeMix(name: string, chained: boolean, steps: number): { written: Buffer; expected: Buffer } {
  const source = Buffer.from(Array.from({ length: 600_000 }, (_, i) => 97 + ((i * 7) % 26)));
  const out = new BufferedFileWriter(join(dir.path, name));
  const parts: Buffer[] = [];
  out.digestFromHere(chained ? 'base' : undefined);
  for (let step = 0; step < steps; step++) {
    const kind = pick(4);
    if (kind === 0) {
      const text = `fresh ${step}\n`;
      out.write(text);
      parts.push(Buffer.from(text));
    } else if (kind === 1) {
      out.writeTabbedLine('u', `name${step}`, `entry\t${step}`);
      parts.push(Buffer.from(`u\tname${step}\tentry\t${step}\n`, 'latin1'));
    } else {
      // Mostly the sizes a changing cycle copies (around the gathered threshold), now and then one
      // large enough to go out on its own.
      const length = kind === 2 ? 1 + pick(3000) : pick(20) === 0 ? 300_000 : 900 + pick(400);
      const from = pick(source.length - length);
      out.writeCopied(source.subarray(from, from + length), from);
      parts.push(source.subarray(from, from + length));
    }
  }
  out.close();
  return { written: readFileSync(join(dir.path, name)), expected: Buffer.concat(parts) };
}

it('writes text, lines and copied ranges in the order they came, however each goes out', () => {
  // Enough copied ranges that the gathered ones fill a write of many ranges several times over.
  for (const chained of [true, false]) {
    const { written, expected } = writeMix(`mix-${chained}`, chained, 6000);
    expect(written.length).toBe(expected.length);
    expect(written.equals(expected)).toBe(true);
  }
});
