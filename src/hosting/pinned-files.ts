/**
 * File access for serve-handler that pins each file to the inode it first looked at, for one request.
 *
 * serve-handler stats a file (Content-Length, ETag), then opens it by name to stream it. `watch`
 * replaces documents by atomic rename while `serve` runs beside it: between the two steps the name can
 * point at a new file of another size, and the answer would carry the old length with the new bytes
 * (a truncated or hanging response). Opening once and serving stat and bytes from that descriptor
 * makes every answer one consistent version of the document, old or new.
 */
import { closeSync, constants, createReadStream, fstatSync, openSync, type Stats } from 'node:fs';

type StreamOptions = { start?: number; end?: number };

export interface PinnedFiles {
  lstat: (path: string) => Promise<Stats>;
  createReadStream: (path: string, options?: StreamOptions) => ReturnType<typeof createReadStream>;
  /** Closes every descriptor; call when the response is done. */
  close: () => void;
}

export function pinnedFiles(): PinnedFiles {
  const fds = new Map<string, number>();
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
      return createReadStream(path, { ...options, fd, autoClose: false, start: options.start ?? 0 });
    },
    close: () => {
      for (const fd of fds.values()) closeSync(fd);
      fds.clear();
    },
  };
}
