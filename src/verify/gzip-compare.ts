/**
 * Whether a gzip file decodes to exactly the bytes of another file, streamed: neither is ever held
 * whole (at a million profiles the creators list is hundreds of megabytes). Asynchronous, as Node's
 * streaming zlib is: ./gzip-check.ts runs it on a worker thread and waits for its answer.
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { describeCause } from '../core/errors.js';

/** Undefined when `variant` decodes to exactly the bytes of `list`; else what differs. */
export async function compareDecoded(variant: string, list: string): Promise<string | undefined> {
  const expected = await open(list, 'r');
  let position = 0;
  try {
    const decoded = createReadStream(variant).pipe(createGunzip());
    for await (const piece of decoded as AsyncIterable<Buffer>) {
      const { bytesRead, buffer } = await expected.read(Buffer.alloc(piece.length), 0, piece.length, position);
      if (bytesRead < piece.length) return `it decodes to more than the list's ${position + bytesRead} bytes`;
      if (!buffer.equals(piece)) return `its bytes differ from the list's within bytes ${position} to ${position + piece.length}`;
      position += piece.length;
    }
  } catch (cause) {
    return `it does not decode (${describeCause(cause)})`;
  } finally {
    await expected.close();
  }
  const { size } = await stat(list);
  return size === position ? undefined : `it decodes to ${position} bytes, the list has ${size}`;
}
