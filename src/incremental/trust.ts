/**
 * The trust rules: what a build may take from the last one without looking again. The output
 * transaction applies them (output/diff.ts) but does not make them; the pass hands them in.
 *
 * - A row signature or list entry recorded in the manifest holds only under the same render key
 *   (tool and base URL, core/render-key.ts): another key may render the same row differently.
 * - A selective pass may carry the last build's profiles over in one move only when their
 *   signatures hold, none is half-way through a commit (pending), and the build is not healing:
 *   a healing build (`build --full`) checks every file it keeps, which carrying them over cannot.
 * - A healing build keeps a file the manifest calls unchanged only once it is checked on disk.
 */
import { sameRenderKey, type RenderKey } from '../core/render-key.js';
import type { Trust } from '../output/diff.js';

export function trustFor(renderKey: RenderKey, healing: boolean): Trust {
  return Object.freeze({
    renderKey,
    healing,
    signaturesHold: (lastKey: string) => sameRenderKey(lastKey, renderKey),
    mayCarryOver: ({ signaturesHold, anyPending }: { signaturesHold: boolean; anyPending: boolean }) =>
      !healing && signaturesHold && !anyPending,
  });
}
