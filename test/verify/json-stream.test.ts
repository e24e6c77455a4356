/**
 * The streaming reader verify uses for the creators list: values that straddle its 1 MiB read
 * chunks, at every offset, with the escapes whose meaning depends on bytes in the previous chunk.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseElement, scanEnvelope } from '../../src/verify/json-stream.js';
import { tempDir } from '../helpers/store.js';

const CHUNK = 1 << 20;
const dir = tempDir('ps-json-stream-');
afterAll(() => dir.cleanup());

/** Values whose end is found only by counting backslashes or nesting across a chunk boundary. */
const TRICKY: unknown[] = ['a\\', 'a\\"b', '\\\\\\"', '"', { k: '}\\"]', n: [1, { m: '\\' }] }, [['\\"'], '{'], 1234567, null];

/** `{"pad":"…","data":[value,true]}` with the value's first byte at CHUNK - lead. */
function envelopeAt(value: unknown, lead: number): string {
  const before = '{"pad":"';
  const after = '","data":[';
  const pad = 'x'.repeat(CHUNK - lead - before.length - after.length);
  return `${before}${pad}${after}${JSON.stringify(value)},true],"meta":{"n":1}}`;
}

describe('scanEnvelope across read chunks', () => {
  it('hands over each element whole, wherever the chunk boundary falls inside it', () => {
    for (const value of TRICKY) {
      const length = JSON.stringify(value).length;
      for (let lead = 0; lead <= length + 1; lead++) {
        const file = join(dir.path, 'list.json');
        writeFileSync(file, envelopeAt(value, lead));
        const elements: unknown[] = [];
        const scan = scanEnvelope(file, (raw, _index, offset) => elements.push(parseElement(raw, offset)));
        expect(elements, `${JSON.stringify(value)} starting ${lead} bytes before a chunk ends`).toEqual([value, true]);
        expect(scan.dataArray).toBe(true);
        expect(scan.members.get('meta')).toEqual({ n: 1 });
      }
    }
  });
});
