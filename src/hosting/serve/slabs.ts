/**
 * Room for small buffers that live as long as a cache entry: cut from slabs of their own, in the
 * order they are asked for, which is the order a first-in first-out cache drops them in, so a slab
 * is freed soon after its last piece.
 *
 * Node's own pool for small buffers would do worse both ways: a fresh 8 KiB allocation every few
 * pieces, and every piece kept pins its whole 8 KiB chunk, which the short-lived buffers of each
 * answer (cut from the same pool) fill around it.
 */

/** Pieces of up to an eighth of this share a slab; larger ones get their own memory. */
const SLAB_BYTES = 256 * 2 ** 10;

export class Slabs {
  private slab = Buffer.allocUnsafeSlow(0);
  private used = 0;

  /** Uninitialised room for `size` bytes. */
  cut(size: number): Buffer {
    if (size > SLAB_BYTES / 8) return Buffer.allocUnsafeSlow(size);
    if (this.used + size > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.used = 0;
    }
    const piece = this.slab.subarray(this.used, this.used + size);
    this.used += size;
    return piece;
  }

  /** `text` (Latin-1) in room of its own. */
  latin1(text: string): Buffer {
    const piece = this.cut(text.length);
    piece.write(text, 0, 'latin1');
    return piece;
  }
}
