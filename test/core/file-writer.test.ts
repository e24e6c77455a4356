/**
 * The writer behind the manifest and the list (file-writer.ts): whatever mix of text, encoded lines
 * and copied byte ranges it is handed, the file holds them in the order they came. Copied ranges go
 * out three ways by size: through its buffer, gathered where they are (with a chained digest), or
 * written on their own.
 */
import { createHash } from 'node:crypto';
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

/** Row `row`'s field is `entry<TAB>row`. */
const entryRows = {
  copyEntry: (row: number, into: Uint8Array, at: number) => at + Buffer.from(`entry\t${row}`, 'latin1').copy(into, at),
};

/**
 * Writes a random mix into a new file (chained or not), returning the file's bytes, what was meant,
 * its digest and the digest those bytes should have.
 */
function writeMix(name: string, chained: boolean, steps: number): { written: Buffer; expected: Buffer; digest: string; meant: string } {
  const source = Buffer.from(Array.from({ length: 600_000 }, (_, i) => 97 + ((i * 7) % 26)));
  const out = new BufferedFileWriter(join(dir.path, name));
  const parts: Buffer[] = [];
  const fresh: Buffer[] = [];
  const runs: number[] = [];
  let at = 0; // where the next part lands in the file
  const digest = out.digestFromHere(chained ? 'base' : undefined);
  for (let step = 0; step < steps; step++) {
    const kind = pick(4);
    if (kind === 0) {
      const text = Buffer.from(`fresh ${step}\n`);
      out.write(text.toString());
      parts.push(text);
      fresh.push(text);
    } else if (kind === 1) {
      // Encoded from its strings, or its last field copied from where it is kept (an EntryMap's row).
      if (step % 2 === 0) out.writeTabbedLine('u', `name${step}`, `entry\t${step}`);
      else out.writeTabbedRow('u', `name${step}`, entryRows, step, `entry\t${step}`.length);
      const line = Buffer.from(`u\tname${step}\tentry\t${step}\n`, 'latin1');
      parts.push(line);
      fresh.push(line);
    } else {
      // Mostly the sizes a changing cycle copies (around the gathered threshold), now and then one
      // large enough to go out on its own.
      const length = kind === 2 ? 1 + pick(3000) : pick(20) === 0 ? 300_000 : 900 + pick(400);
      const from = pick(source.length - length);
      out.writeCopied(source.subarray(from, from + length), from);
      runs.push(at, from, length);
      parts.push(source.subarray(from, from + length));
      if (!chained) fresh.push(source.subarray(from, from + length));
    }
    at += parts.at(-1)!.length;
  }
  out.close();
  return {
    written: readFileSync(join(dir.path, name)),
    expected: Buffer.concat(parts),
    digest: digest.hex(),
    meant: meantDigest(chained, fresh, runs),
  };
}

/**
 * WrittenDigest's digest, worked out from what was written: the SHA-256 of every byte, or chained,
 * of the base, the bytes written anew in order, and each copied run's place, source and length.
 */
function meantDigest(chained: boolean, fresh: Buffer[], runs: number[]): string {
  const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest();
  if (!chained) return sha256(Buffer.concat(fresh)).toString('hex');
  return createHash('sha256')
    .update('profile-snapshot chained digest 1\nbase\n')
    .update(sha256(Buffer.concat(fresh)))
    .update(sha256(new Uint8Array(Float64Array.from(runs).buffer)))
    .digest('hex');
}

it('writes text, lines and copied ranges in the order they came, however each goes out', () => {
  // Enough copied ranges that the gathered ones fill a write of many ranges several times over.
  for (const chained of [true, false]) {
    const { written, expected, digest, meant } = writeMix(`mix-${chained}`, chained, 6000);
    expect(written.length).toBe(expected.length);
    expect(written.equals(expected)).toBe(true);
    // The fresh bytes digested in order once each, however the copied runs between them went out.
    expect(digest).toBe(meant);
  }
});
