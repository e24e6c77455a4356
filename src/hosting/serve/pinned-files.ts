/**
 * File access for serve-handler that pins each file to the inode it first looked at, for one request.
 *
 * serve-handler stats a file (Content-Length, ETag), then opens it by name to stream it. `watch`
 * replaces documents by atomic rename while `serve` runs beside it: between the two steps the name can
 * point at a new file of another size, and the answer would carry the old length with the new bytes
 * (a truncated or hanging response). Opening once and serving stat and bytes from that descriptor
 * makes every answer one consistent version of the document, old or new.
 */
import { closeSync, constants, createReadStream, fstatSync, open, openSync, read, type ReadStream, type Stats } from 'node:fs';

type StreamOptions = { start?: number; end?: number };

/** fs methods for a stream over a shared descriptor: reads as usual, never closes it. */
const SHARED_FD_FS = { open, read, close: (_fd: number, callback: (error: null) => void) => callback(null) };

export interface PinnedFiles {
  lstat: (path: string) => Promise<Stats>;
  createReadStream: (path: string, options?: StreamOptions) => ReturnType<typeof createReadStream>;
  /** Ends every stream and closes every descriptor (once reads in flight are done); call when the response is closed. */
  close: () => void;
}

export function pinnedFiles(): PinnedFiles {
  const fds = new Map<string, number>();
  const streams = new Set<ReadStream>();
  let closing = false;
  // A descriptor may only be closed once no stream reads from it. The client can be done (it has
  // Content-Length bytes) and hang up while a stream still has its final read in flight.
  const release = () => {
    if (!closing || streams.size > 0) return;
    for (const fd of fds.values()) closeSync(fd);
    fds.clear();
  };
  return {
    lstat: async (path) => {
      let fd = fds.get(path);
      if (fd === undefined) {
        try {
          // O_NOFOLLOW: the tool never writes symlinks; one in the out dir is treated as missing.
          fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ELOOP') throw Object.assign(new Error(`symlink refused: ${path}`), { code: 'ENOENT' });
          throw error;
        }
        fds.set(path, fd);
      }
      return fstatSync(fd);
    },
    createReadStream: (path, options = {}) => {
      const fd = fds.get(path);
      if (fd === undefined) return createReadStream(path, options);
      // Positional reads from the pinned descriptor: several streams (ETag hash, body) never interfere.
      // A stream closes its descriptor when it ends or is destroyed (whatever autoClose says); this
      // one is shared, so the stream's close is a no-op and the descriptor is closed here, once every
      // stream is done.
      const stream = createReadStream(path, { ...options, fd, start: options.start ?? 0, fs: SHARED_FD_FS });
      streams.add(stream);
      stream.once('close', () => {
        streams.delete(stream);
        release();
      });
      return stream;
    },
    close: () => {
      closing = true;
      // Destroying waits for a read in flight, then emits 'close'; the last one releases the descriptors.
      // (A stream the client abandoned mid-body would otherwise hold its descriptor forever.)
      for (const stream of streams) stream.destroy();
      release();
    },
  };
}
