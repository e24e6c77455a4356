/** Positioned reads that must fill what they are given: a part of a file to upload, a range written earlier. */
import { readSync } from 'node:fs';

/** Fills `target` with the bytes of the open file `fd` from `position` on; a shorter file is an error. */
export function readInto(fd: number, position: number, target: Uint8Array): void {
  for (let done = 0; done < target.length;) {
    const read = readSync(fd, target, done, target.length - done, position + done);
    if (read === 0) throw new Error(`file shorter than expected (${position + done} of ${position + target.length} bytes)`);
    done += read;
  }
}
